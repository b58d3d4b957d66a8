"""The Ozaki scheme II reference (autotune.families.ozaki_math), the contract the ozaki kernel follows:
its constants and bounds, that residues and Garner's reconstruction are exact, that the only error is
the scaling's rounding, its accuracy against FP32 SGEMM (numpy's, the CPU's stand-in for cuBLAS),
that the float64 comparison under the fp32-tc contract catches a dropped modulus, a wrong shift and
an overflowing int32 sum, and that docs/ozaki.md's tables are the committed study's. CPU, seconds."""
from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import numpy as np
import pytest

from autotune.backends.reference import FP32_TC, abs_product, fp32_error, judge, reference, relative_error
from autotune.families import FAMILIES
from autotune.families.ozaki_math import (
    MAX_BITS,
    MAX_K,
    MAX_MODULI,
    MIN_MODULI,
    MODULI,
    bits,
    col_shifts,
    correct_symmetric,
    crt_signed,
    crt_weights,
    garner,
    garner_constants,
    modular_product,
    modulus_product,
    norm_bits,
    ozaki_matmul,
    ozaki_steps,
    residues,
    row_shifts,
    scaled,
    signed,
    to_float32,
)

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "ozaki.md"
STUDY = ROOT / "benchmarks" / "ozaki_accuracy.py"
STUDY_JSON = ROOT / "benchmarks" / "data" / "ozaki-accuracy-cpu.json"
TS = range(MIN_MODULI, MAX_MODULI + 1)


def randn(shape: tuple[int, int], seed: int, wide: float = 0.0) -> np.ndarray:
    """Standard normal float32; wide > 0: each value times its own 2^u, u uniform in [-wide, wide]."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    return (x * 2.0 ** rng.uniform(-wide, wide, shape) if wide else x).astype(np.float32)


def errors(C: np.ndarray, A: np.ndarray, B: np.ndarray) -> tuple[float, float]:
    """(Frobenius relative error, largest |C - C64| / (|A|.|B|)) against the float64 product."""
    ref = reference(A, B)
    return relative_error(C, ref), float(np.max(np.abs(C.astype(np.float64) - ref) / abs_product(A, B)))


def breaks_contract(C: np.ndarray, A: np.ndarray, B: np.ndarray) -> bool:
    """What the fp32-tc verification says: error against float64 beyond 2x numpy SGEMM's."""
    ref = reference(A, B)
    return judge(FP32_TC, relative_error(C, ref), fp32_error(A, B, ref)) is not None


def pipeline(A: np.ndarray, B: np.ndarray, t: int, product=modular_product, used: int | None = None,
             row_shift_error: int = 0) -> np.ndarray:
    """ozaki_steps from the public pieces, without its K check, with a fault to inject: another
    product (an int32-wrapping one), Garner over only the first `used` moduli, row 0 scaled back
    with its shift off by row_shift_error."""
    p = bits(t, A.shape[1])
    s_row, s_col = row_shifts(A, p), col_shifts(B, p)
    a, b = scaled(A, s_row, axis=0), scaled(B, s_col, axis=1)
    cs = [np.mod(product(residues(a, m), residues(b, m)), m) for m in MODULI[:t]]
    used = t if used is None else used
    s_back = s_row.copy()
    s_back[0] += row_shift_error
    return to_float32(signed(garner(cs[:used]), used), s_back, s_col)


# --------------------------------------------------------------------------- constants and bounds

def test_moduli_are_odd_pairwise_coprime_and_their_residues_fit_int8():
    assert len(MODULI) == MAX_MODULI == 8
    for i, m in enumerate(MODULI):
        assert m % 2 == 1 and m <= 255 and (m - 1) // 2 <= 127
        assert all(math.gcd(m, n) == 1 for n in MODULI[:i]), f"{m} shares a factor with an earlier modulus"


def test_every_modulus_product_fits_a_uint64():
    for t in TS:
        M = modulus_product(t)
        assert M == math.prod(MODULI[:t]) and M % 2 == 1 and M < 2**64
        assert (M - 1) // 2 < 2**63  # the signed result fits int64
    assert modulus_product(8) == 12292429416557426565  # about 2^63.41


@pytest.mark.parametrize("t", TS)
def test_bits_is_the_largest_exact_p(t):
    M = modulus_product(t)
    for K in (1, 2, 13, 37, 200, 1024, 4096, 16384, MAX_K):
        try:
            p = bits(t, K)
        except ValueError:
            assert 2 * K * 4 >= M, f"t={t} K={K}: p = 1 would be exact"
            continue
        assert 1 <= p <= MAX_BITS and 2 * K * 4**p < M  # |sum a'b'| <= K 4^p < M / 2
        assert p == MAX_BITS or 2 * K * 4 ** (p + 1) >= M, f"t={t} K={K}: p + 1 would still be exact"


def test_bits_refuses_in_one_line_where_no_bit_is_exact():
    with pytest.raises(ValueError, match="cannot hold") as exc:
        bits(2, 20000)
    assert "\n" not in str(exc.value)
    with pytest.raises(ValueError, match="choose 2 to 8"):
        bits(9, 16)


def test_max_k_is_the_int32_bound():
    assert MAX_K == 133144
    assert MAX_K * 127**2 <= 2**31 - 1 < (MAX_K + 1) * 127**2


def test_garner_constants():
    for t in TS:
        consts = garner_constants(t)
        assert [m for m, _, _ in consts] == list(MODULI[:t])
        for i, (m, prefix, inv) in enumerate(consts):
            assert prefix == math.prod(MODULI[:i]) and 0 < inv < m and prefix * inv % m == 1 % m


def test_the_reference_is_not_a_family():
    # the family is autotune.families.ozaki's; this module only holds the numbers it follows
    assert "ozaki_math" not in FAMILIES and FAMILIES["ozaki"].template == "ozaki.cu.j2"


# --------------------------------------------------------------------------- exact steps

def symmetric(x: int, m: int) -> int:
    r = x % m  # Python: [0, m)
    return r - m if r > m // 2 else r


@pytest.mark.parametrize("t", TS)
def test_residues_and_garner_round_trip_every_integer_in_range(t):
    M = modulus_product(t)
    half = (M - 1) // 2
    rng = np.random.default_rng(t)
    x = np.concatenate([rng.integers(-half, half + 1, 2000, dtype=np.int64),
                        np.array([0, 1, -1, half, -half, half - 1, -half + 1], dtype=np.int64),
                        rng.integers(-min(half, 2**31), min(half, 2**31) + 1, 500, dtype=np.int64)])
    assert (np.abs(x) >= 2**52).any() == (half >= 2**52)  # residues' exact integer path, where in range
    cs = []
    for m in MODULI[:t]:
        r = residues(x, m)
        assert r.dtype == np.int8 and np.all(np.abs(r.astype(np.int64)) <= (m - 1) // 2)
        assert [int(v) for v in r] == [symmetric(int(v), m) for v in x]
        cs.append(np.mod(r.astype(np.int64), m))
    back = garner(cs)
    assert back.dtype == np.uint64 and int(back.max()) < M
    assert np.array_equal(signed(back, t), x)


def residue_tuple(x: np.ndarray, t: int) -> list[np.ndarray]:
    """x (int64, in the symmetric range) as its residues c_i in [0, m_i), what the kernels keep"""
    return [np.mod(residues(x, m).astype(np.int64), m) for m in MODULI[:t]]


def test_crt_weights_are_one_modulo_their_own_modulus_and_zero_modulo_the_others():
    for t in TS:
        M = modulus_product(t)
        for i, w in enumerate(crt_weights(t)):
            assert 0 < w < M and [w % m for m in MODULI[:t]] == [int(j == i) for j in range(t)]


@pytest.mark.parametrize("t", TS)
def test_the_crt_sum_gives_garners_symmetric_value_for_every_residue_tuple(t):
    # random values over the whole symmetric range (past 2^63's half for 8 moduli), its ends, and where the
    # nearest multiple of Mt changes: ozakiwg's reconstruction (crt_signed) is Garner's (signed(garner))
    M = modulus_product(t)
    half = (M - 1) // 2
    rng = np.random.default_rng(10 + t)
    x = np.concatenate([rng.integers(-half, half + 1, 20000, dtype=np.int64),
                        np.array([0, 1, -1, half, -half, half - 1, -half + 1, half // 2, -(half // 2)], dtype=np.int64)])
    cs = residue_tuple(x, t)
    assert np.array_equal(signed(garner(cs), t), x)
    assert np.array_equal(crt_signed(cs), x)


@pytest.mark.parametrize("t", TS)
def test_the_crt_sums_quotient_from_doubles_is_within_two_to_the_minus_39(t):
    # the bound crt_signed's one correction rests on, against exact rationals, at the largest residues too
    from fractions import Fraction

    M, weights = modulus_product(t), crt_weights(t)
    rng = np.random.default_rng(20 + t)
    tuples = [[m - 1 for m in MODULI[:t]]] + [[int(rng.integers(0, m)) for m in MODULI[:t]] for _ in range(300)]
    worst = Fraction(0)
    for cs in tuples:
        lo = sum(c * (w & 0xFFFFFFFF) for c, w in zip(cs, weights))
        hi = sum(c * (w >> 32) for c, w in zip(cs, weights))
        assert lo < 2**43 and hi < 2**43
        estimate = (float(hi) * 2.0**32 + float(lo)) * (1.0 / float(M))
        worst = max(worst, abs(Fraction(estimate) - Fraction(hi * 2**32 + lo, M)))
    assert worst < Fraction(1, 2**39)


@pytest.mark.parametrize("t", TS)
def test_a_quotient_one_off_is_corrected_into_the_symmetric_range(t):
    # where S / Mt lies within 2^-39 of a half the rounded quotient can be one off: y = S - q Mt is then the
    # symmetric value minus or plus Mt, just past the range's other end, and one correction brings it back
    M = modulus_product(t)
    half = (M - 1) // 2
    near = [half, half - 1, half - half // 8]
    y0 = np.array(near + [-v for v in near], dtype=np.int64)
    off = np.where(y0 > 0, (y0.view(np.uint64) - np.uint64(M)).view(np.int64), (y0.view(np.uint64) + np.uint64(M)).view(np.int64))
    assert [int(v) for v in off] == [int(v) - M if v > 0 else int(v) + M for v in y0]  # an int64 still
    assert np.all((off < -half) | (off > half))
    assert np.array_equal(correct_symmetric(off, t), y0)
    assert np.array_equal(correct_symmetric(y0, t), y0)


def test_modular_product_is_exact():
    # sums near the int32 limit (residues of one sign, K = MAX_K), where FP32 would round
    rng = np.random.default_rng(1)
    ra = rng.integers(100, 128, (3, MAX_K)) * np.array([[1], [-1], [1]])
    rb = rng.integers(-127, 128, (MAX_K, 2))
    rb[:, 0] = 127
    ra, rb = ra.astype(np.int8), rb.astype(np.int8)
    P = modular_product(ra, rb)
    assert P.dtype == np.int64 and np.array_equal(P, ra.astype(np.int64) @ rb.astype(np.int64))
    assert abs(int(P[1, 0])) > 2**30


def test_scaling_puts_each_row_and_column_just_below_2_to_the_p():
    A, B = randn((13, 37), 2, wide=30), randn((37, 29), 3, wide=30)
    A[4] = 0.0  # an all-zero row: e = 0
    p = 20
    s_row, s_col = row_shifts(A, p), col_shifts(B, p)
    a, b = scaled(A, s_row, axis=0), scaled(B, s_col, axis=1)
    assert s_row[4] == p and not a[4].any()
    for big in (np.abs(np.delete(a, 4, axis=0)).max(axis=1), np.abs(b).max(axis=0)):
        assert np.all(big >= 2 ** (p - 1)) and np.all(big <= 2**p)


def test_scaling_rounds_ties_to_even():
    A = np.array([[1.0, 2.5 / 64, 3.5 / 64, -2.5 / 64, 0.5 / 64]], dtype=np.float32)
    assert row_shifts(A, 7)[0] == 6  # 1.0 = 0.5 * 2^1
    assert scaled(A, row_shifts(A, 7), axis=0).tolist() == [[64, 2, 4, -2, 0]]


def extreme(A: np.ndarray, B: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows and columns at FP32's ends: near 2^127, subnormal (2^-140), zero; C overflows and
    underflows in places."""
    A, B = A.copy(), B.copy()
    A[0] *= np.float32(2.0**100)
    A[1] *= np.float32(2.0**-140)
    A[2] = 0
    B[:, 0] *= np.float32(2.0**27)
    B[:, 1] *= np.float32(2.0**-30)
    return A, B


@pytest.mark.parametrize("t", TS)
@pytest.mark.parametrize("inputs", ["randn", "extreme"])
def test_the_only_error_is_the_scaling(t, inputs):
    """The result is the exact integer product of the scaled operands (Python ints), scaled back as
    specified: float64, times 2^-(s_i + s_j), one rounding to float32."""
    A, B = randn((13, 37), 4), randn((37, 29), 5)
    if inputs == "extreme":
        A, B = extreme(A, B)
        assert np.isinf(ozaki_matmul(A, B, t)[0, 0]) and ozaki_matmul(A, B, t)[1, 1] == 0
    steps = ozaki_steps(A, B, t)
    exact = steps.a_int.astype(object) @ steps.b_int.astype(object)
    assert all(2 * abs(v) < modulus_product(t) for v in exact.flat)
    assert [int(v) for v in steps.x_signed.flat] == list(exact.flat)
    with np.errstate(over="ignore"):  # beyond FP32: inf, as specified
        want = [[np.float32(math.ldexp(float(exact[i, j]), -int(steps.s_row[i] + steps.s_col[j])))
                 for j in range(29)] for i in range(13)]
    assert np.array_equal(steps.C, np.array(want, dtype=np.float32))
    assert np.array_equal(steps.C, ozaki_matmul(A, B, t))


def test_powers_of_two_on_rows_and_columns_cost_nothing():
    A, B = randn((13, 37), 6), randn((37, 29), 7)
    rows, cols = np.arange(13) % 7 - 3, np.arange(29) % 5 - 2
    C = ozaki_matmul(A, B, 6)
    A2, B2 = np.ldexp(A, rows[:, None]).astype(np.float32), np.ldexp(B, cols[None, :]).astype(np.float32)
    assert np.array_equal(ozaki_matmul(A2, B2, 6), np.ldexp(C, rows[:, None] + cols[None, :]))


def test_refuses_what_the_kernel_cannot_carry():
    A, B = randn((3, 5), 8), randn((5, 2), 9)
    for bad in (np.inf, -np.inf, np.nan):
        A2 = A.copy()
        A2[1, 2] = bad
        with pytest.raises(ValueError, match="inf or NaN"):
            ozaki_matmul(A2, B, 8)
        with pytest.raises(ValueError, match="inf or NaN"):
            ozaki_matmul(B.T.copy(), A2.T.copy(), 8)
    with pytest.raises(ValueError, match="float32"):
        ozaki_matmul(A.astype(np.float64), B, 8)
    with pytest.raises(ValueError, match="MAX_K = 133144"):
        ozaki_matmul(np.ones((1, MAX_K + 1), np.float32), np.ones((MAX_K + 1, 1), np.float32), 8)


# --------------------------------------------------------------------------- accuracy

@pytest.mark.parametrize("shape", [(64, 200, 96), (13, 1023, 29)])
def test_accuracy_improves_with_each_modulus_and_beats_sgemm_at_eight(shape):
    M, K, N = shape
    A, B = randn((M, K), 10), randn((K, N), 11)
    ours = [errors(ozaki_matmul(A, B, t), A, B) for t in TS]
    sgemm = errors(A @ B, A, B)
    for metric in (0, 1):
        series = [e[metric] for e in ours]
        assert all(a > b for a, b in zip(series, series[1:])), series  # each modulus adds about 2 bits
        assert series[-1] <= sgemm[metric], (series[-1], sgemm[metric])
    # the contract (2x SGEMM's Frobenius error) first holds at t = 7 at these K; t <= 6 is far off
    frob = dict(zip(TS, (e[0] for e in ours)))
    assert frob[7] <= 2 * sgemm[0] and all(frob[t] > 8 * sgemm[0] for t in TS if t <= 6)


def test_wide_exponents_within_a_row_cost_accuracy():
    """Values spread over 2^+-20 inside each row and column: small ones lose bits to their row's
    largest. At t = 8 the Frobenius error still meets the contract here, but the worst output
    relative to |A|.|B| is tens of times SGEMM's (docs/ozaki.md has the table)."""
    A0, B0 = randn((64, 200), 12), randn((200, 96), 13)
    plain = errors(ozaki_matmul(A0, B0, 8), A0, B0)
    A, B = randn((64, 200), 12, wide=20), randn((200, 96), 13, wide=20)
    ours, sgemm = errors(ozaki_matmul(A, B, 8), A, B), errors(A @ B, A, B)
    assert ours[0] <= 2 * sgemm[0]
    assert ours[1] > 10 * sgemm[1] and ours[1] > 10 * plain[1]


# --------------------------------------------------------------------------- faults the check catches

def test_the_faultless_pipeline_is_ozaki_matmul_and_passes():
    A, B = randn((64, 200), 14), randn((200, 96), 15)
    C = pipeline(A, B, 8)
    assert np.array_equal(C, ozaki_matmul(A, B, 8)) and not breaks_contract(C, A, B)


@pytest.mark.parametrize("t", [7, 8])
def test_a_dropped_modulus_is_caught(t):
    A, B = randn((64, 200), 14), randn((200, 96), 15)
    assert not breaks_contract(pipeline(A, B, t), A, B)  # t = 7 is enough here: the contract holds
    assert breaks_contract(pipeline(A, B, t, used=t - 1), A, B)


@pytest.mark.parametrize("off", [1, -1])
def test_a_shift_off_by_one_is_caught(off):
    A, B = randn((64, 200), 14), randn((200, 96), 15)
    assert not breaks_contract(pipeline(A, B, 7), A, B)
    assert breaks_contract(pipeline(A, B, 7, row_shift_error=off), A, B)


def wrap_int32(ra: np.ndarray, rb: np.ndarray) -> np.ndarray:
    """The product as an int32 accumulator leaves it: the exact sum modulo 2^32, two's complement."""
    return (modular_product(ra, rb) + 2**31) % 2**32 - 2**31


def test_an_overflowing_int32_sum_is_caught():
    """K = MAX_K + 1 and every residue mod 255 at 127: the sum 127^2 K passes 2^31 - 1 and wraps,
    which moves c_0 by 2^32 = 1 (mod 255) and x by a multiple of M_8 / 255."""
    K, t = MAX_K + 1, 8
    p = bits(t, K)
    x = 2**p - (2**p - 127) % 255  # a' = x: the largest value <= 2^p with x = 127 (mod 255)
    assert x % 255 == 127 and x >= 2 ** (p - 1)
    A = np.full((2, K), x / 2**p, dtype=np.float32)
    B = np.full((K, 2), x / 2**p, dtype=np.float32)
    assert int(wrap_int32(residues(np.array([[x]]), 255), residues(np.array([[x]]), 255))[0, 0]) == 127**2
    assert not breaks_contract(pipeline(A, B, t), A, B)  # exact in int64: correct
    assert breaks_contract(pipeline(A, B, t, product=wrap_int32), A, B)


# --------------------------------------------------------------------------- the docs

def load_study():
    spec = importlib.util.spec_from_file_location("ozaki_accuracy", STUDY)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", [STUDY_JSON.name, "ozaki-accuracy-norm-cpu.json"])
def test_the_docs_tables_are_the_committed_study(name):
    """Both studies: step 1 by the largest value (the kernels') and by the norm (SCALE_NORM)."""
    study, path = load_study(), STUDY_JSON.with_name(name)
    data = json.loads(path.read_text())
    assert path.stat().st_size < 50_000
    assert data["command"] in DOC.read_text()
    assert study.markdown_tables(data) in DOC.read_text(), f"docs/ozaki.md's tables differ from {name}"
    for row in data["results"]:  # the p the JSON states is bits()'s, or norm_bits()'s
        want = norm_bits if data.get("scale") == "norm" else (lambda t, K=row["K"]: bits(t, K))
        assert all(v["p"] == want(int(t)) for t, v in row["t"].items())
