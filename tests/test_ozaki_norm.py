"""The Ozaki reference's norm scaling (ozaki_math.SCALE_NORM): each row of A and column of B scaled so that the
Euclidean norm of its rounded integers is at most 2^q, q = norm_bits(t), which bounds every sum of products by
4^q < M_t / 2 (Cauchy-Schwarz) whatever K is. Its shifts are the largest that keep the bound, the same in any
order of the values (integer sums), the reconstruction exact even where the bound is nearly tight, and a shift
one larger is caught. On random rows it carries more bits than scaling by the largest value. CPU, seconds."""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from autotune.backends.reference import reference, relative_error
from autotune.families import ozaki_math
from autotune.families.ozaki_math import (
    MAX_BITS,
    MAX_MODULI,
    MIN_MODULI,
    NORM_UNIT,
    SCALE_NORM,
    bits,
    modulus_product,
    norm_bits,
    norm_shifts,
    ozaki_matmul,
    ozaki_steps,
    scaled,
    square_units,
)
from tests.test_ozaki_math import randn

TS = range(MIN_MODULI, MAX_MODULI + 1)


def tight(K: int = 1000) -> tuple[np.ndarray, np.ndarray]:
    """Rows of A equal to columns of B, all one value up to sign (the third half another): sum a'b' = ||a'|| ||b'||
    on the diagonal, Cauchy-Schwarz's equality."""
    A = np.full((3, K), 0.9, dtype=np.float32)
    A[1] *= -1
    A[2, ::2] = 0.5
    return A, A.T.copy()


def rows_of_every_kind(K: int) -> np.ndarray:
    """Rows a bound can get wrong: random, wide, constant (every value the largest: the rounding slack
    counts most), one value, a zero row, subnormals, values at FP32's top."""
    rows = [randn((1, K), 1)[0], randn((1, K), 2, wide=20)[0], np.full(K, 0.7), np.eye(1, K, K // 2)[0] * -3.0,
            np.zeros(K), np.full(K, np.float32(1e-44)), np.full(K, np.float32(3e38)) * np.sign(randn((1, K), 3)[0])]
    return np.array(rows, dtype=np.float32)


def rounded_norm_squared(row: np.ndarray, s: int) -> int:
    return sum(int(v) ** 2 for v in np.rint(np.ldexp(row.astype(np.float64), s)))


@pytest.mark.parametrize("t", TS)
def test_norm_bits_is_the_largest_safe_q(t):
    q = norm_bits(t)
    assert 2 * 4**q < modulus_product(t) and (q == MAX_BITS or 2 * 4 ** (q + 1) >= modulus_product(t))


@pytest.mark.parametrize("K", [1, 2, 7, 333, 4096])
@pytest.mark.parametrize("t", [2, 7, 8])
def test_norm_shifts_keep_each_rounded_row_within_2_to_the_q_and_are_the_largest_that_provably_do(K, t):
    q, X = norm_bits(t), rows_of_every_kind(K)
    shifts = norm_shifts(X, q, axis=1)
    c = math.isqrt(K - 1) + 1 if K > 1 else 1
    S, e = square_units(X, axis=1)
    for row, s, units, exponent in zip(X, shifts, S, e):
        s, units, exponent = int(s), int(units), int(exponent)
        assert rounded_norm_squared(row, s) <= 4**q
        if not row.any():
            assert s == 0
            continue
        # s meets the sufficient condition 2^s sqrt(units 4^(e - NORM_UNIT)) + c/2 <= 2^q, and s + 1 does not
        # (squared, in exact rationals: (2^(q+1) - c)^2 against 4^(s + e - NORM_UNIT + 1) units)
        def holds(shift: int) -> bool:
            return Fraction(4) ** (shift + exponent - NORM_UNIT + 1) * units <= (2 ** (q + 1) - c) ** 2
        assert holds(s) and not holds(s + 1)


def test_square_units_bound_the_squares_from_above_by_less_than_a_unit_each():
    X = np.concatenate([rows_of_every_kind(333), randn((4, 333), 8, wide=30)])
    S, e = square_units(X, axis=1)
    for row, units, exponent in zip(X, S, e):
        exact = sum(Fraction(float(v)) ** 2 for v in row) / Fraction(4) ** (int(exponent) - NORM_UNIT)
        assert exact <= int(units) < exact + len(row)
        assert not row.any() or abs(float(row[np.argmax(np.abs(row))])) < 2.0 ** int(exponent)


def test_the_rounding_slack_decides_the_shift_of_a_row_just_below_the_bound():
    """K = 4096 values of (2^21 - 1/4) 2^-20: at s = 20 the norm is 2^27 - 16, within c/2 = 32 of 2^27 (q at
    t = 7), so without the slack s = 20 would pass; with it the shift is 19."""
    q, K = norm_bits(7), 4096
    assert q == 27
    row = np.full((1, K), (2**21 - 0.25) * 2.0**-20, dtype=np.float32)
    assert float(row[0, 0]) * 2**20 == 2**21 - 0.25  # exact in float32
    assert int(norm_shifts(row, q, axis=1)[0]) == 19


def test_norm_shifts_of_columns_are_those_of_the_transposed_rows_and_do_not_depend_on_order():
    X = randn((300, 9), 4, wide=12)
    q = norm_bits(7)
    by_rows = norm_shifts(X.T.copy(), q, axis=1)
    assert np.array_equal(norm_shifts(X, q, axis=0), by_rows)
    shuffled = X[np.random.default_rng(5).permutation(300)]
    assert np.array_equal(norm_shifts(shuffled, q, axis=0), by_rows)


@pytest.mark.parametrize("t", TS)
def test_the_sum_is_exact_where_the_bound_is_nearly_tight(t):
    """Rows of A equal to columns of B, all one value: sum a'b' = ||a'|| ||b'||, Cauchy-Schwarz's equality,
    and the integer result is the exact one (Python ints)."""
    A, B = tight()
    steps = ozaki_steps(A, B, t, SCALE_NORM)
    exact = steps.a_int.astype(object) @ steps.b_int.astype(object)
    assert max(abs(int(v)) for v in exact.flat) > 4 ** steps.p / 4  # within 2 bits of the bound
    assert [int(v) for v in steps.x_signed.flat] == list(exact.flat)


def test_a_shift_one_larger_than_the_bound_allows_wraps(monkeypatch):
    """The same nearly tight product with every shift one larger: the sums pass M_t / 2 and Garner's result
    is another number, far from the product. (At t = 8 q is held to MAX_BITS below what M_8 allows: one more
    bit still fits there.)"""
    K, t = 1000, 7
    A = np.full((2, K), 0.9, dtype=np.float32)
    B = A.T.copy()
    right = ozaki_matmul(A, B, t, SCALE_NORM)
    assert relative_error(right, reference(A, B)) < 1e-6
    loose = ozaki_math._norm_shift
    monkeypatch.setattr(ozaki_math, "_norm_shift", lambda S, e, R: loose(S, e, R) + 1)
    wrong = ozaki_matmul(A, B, t, SCALE_NORM)
    assert relative_error(wrong, reference(A, B)) > 0.5


def test_the_scaled_values_fit_the_kernels_int32():
    X = rows_of_every_kind(4096)
    for t in TS:
        q = norm_bits(t)
        assert np.abs(scaled(X, norm_shifts(X, q, axis=1), axis=0)).max() <= 2**q <= 2**MAX_BITS


@pytest.mark.parametrize("wide", [0.0, 20.0])
def test_norm_scaling_carries_more_bits_than_the_largest_value_at_long_k(wide):
    """At K = 4096 with 7 moduli, random rows: bits(7, K) = 21 bits for the largest value, while the norm's
    bound leaves the values about 2 bits more; the error falls by more than 2x."""
    A, B = randn((48, 4096), 6, wide), randn((4096, 40), 7, wide)
    ref = reference(A, B)
    by_largest = relative_error(ozaki_matmul(A, B, 7), ref)
    by_norm = relative_error(ozaki_matmul(A, B, 7, SCALE_NORM), ref)
    assert bits(7, 4096) == 21 and norm_bits(7) == 27
    assert by_norm < by_largest / 2, (by_norm, by_largest)


def test_the_docs_gains_at_seven_moduli_are_the_committed_studies():
    """docs/ozaki.md's fall of the Frobenius error at t = 7 from the largest value's scaling to the norm's: the
    medians over seeds of the two committed studies' errors, K by K. Absolute errors (ratio times SGEMM's, floored
    at u as the study floors it), as the two studies ran on hosts whose OpenBLAS SGEMM errors differ by up to 13%."""
    import json
    import statistics
    from pathlib import Path

    data = Path(__file__).resolve().parents[1] / "benchmarks" / "data"
    by_largest, by_norm = (json.loads((data / name).read_text())["results"]
                           for name in ("ozaki-accuracy-cpu.json", "ozaki-accuracy-norm-cpu.json"))

    def error(row: dict) -> float:
        return statistics.median(r * max(s, 2.0**-24) for r, s in zip(row["t"]["7"]["frob_ratio"], row["sgemm_frob"]))

    falls: dict[str, dict[int, float]] = {"randn": {}, "wide": {}}
    for old, new in zip(by_largest, by_norm):
        assert (old["inputs"], old["K"]) == (new["inputs"], new["K"])
        falls[old["inputs"]][old["K"]] = error(old) / error(new)
    flat = " ".join((data.parents[1] / "docs" / "ozaki.md").read_text().split())
    randn, wide = falls["randn"], falls["wide"]
    assert (f"error at t = 7 falls {min(randn.values()):.1f}-{max(randn.values()):.1f}x on randn and "
            f"{min(wide.values()):.1f}-{max(wide.values()):.1f}x on wide inputs ({randn[4096]:.1f}x and "
            f"{wide[4096]:.1f}x at K = 4096)") in flat
