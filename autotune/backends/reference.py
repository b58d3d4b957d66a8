"""Correctness: the float64 reference, the relative Frobenius error, and the accuracy contracts.

Tolerance. A float32 sum of K products rounds at every step, with unit roundoff
u = 2**-24 ~ 6e-8. With inputs uniform in [-1, 1] the rounding errors have random signs
and grow like a random walk, so the relative (Frobenius) error of an FP32 result against
a float64 reference is about sqrt(K) * u: ~2e-6 at K = 1024, ~8e-6 at K = 16384. The
worst case, K * u, stays under 1e-4 up to K ~ 1600. A real bug is far larger: leaving one
of K terms out of every output costs ~1/sqrt(K) (3e-2 at K = 1024), a wrong tile ~1. So
TOLERANCE = 1e-4 sits well above rounding and well below any systematic error. A single
wrong output among very many is diluted by the norm (0.01 off in one of 4096^2 outputs is
~1e-7 of it), so the FP32 contract also bounds every element (below); the NaN poisoning of C
catches the commonest such bug, an output never written.

The elementwise bound, FP32 contract only: |C - ref| <= ELEMENT_FACTOR * K * u * (|A| . |B|),
elementwise, |A| . |B| the product of the inputs' absolute values (in float64 on the host, by
cuBLAS on the GPU; made once per problem beside the reference). Any FP32 sum of K products, in any
order, with or without FMA, is within gamma_K * (|A| . |B|) of the exact product (gamma_K =
K*u / (1 - K*u), Higham, Accuracy and Stability, 3.5), worst case; rounding errors of random sign
leave a correct kernel far inside it (near 1e-3 of it at 4096^3, as issue 43 reports).
ELEMENT_FACTOR = 2: the reference may itself be an FP32 product (cuBLAS on the GPU), so the two
outputs differ by up to two such bounds; against float64 (the host) the factor is slack. Under
fp32-tc it does not apply: a 3xTF32 product drops the small parts' product and rounds each split
(about 12 u |a||b| per product before any sum), and tensor cores accumulate with their own
rounding, which this FP32 bound does not model; those families keep their Frobenius contract.

Relative error, everywhere (host, GPU comparison kernel, benchmarks): ||C - ref||_F / ||ref||_F in
float64. The Frobenius ratio, not the largest element's: it is the quantity the error analysis of a
sum of K products predicts (sqrt(K) * u, above), so an FP32 kernel and cuBLAS land on nearly the
same value and their ratio is stable from one input to the next; the largest elementwise error is
one extreme of M*N draws and jitters by a factor of about 2 run to run, which a bound of 2x cannot
tolerate.

The accuracy contracts (the user picks one with --precision; families.precision_of says which one
a family's rows are measured under):
- fp32: FP32 arithmetic (every product and sum an FP32 operation, as cuBLAS's). Its error is then
  FP32 rounding by construction, and the check only has to catch bugs: err against the FP32
  reference (cuBLAS SGEMM on the GPU, float64 on the host) at most TOLERANCE.
- fp32-tc: any arithmetic (tensor cores, TF32 parts) as long as the result is as accurate as FP32
  itself. err = the kernel's relative error against a float64 product of the same inputs, err_ref
  = cuBLAS FP32's (pedantic: no TF32) against the same float64 product; pass iff
  err <= TC_FACTOR * err_ref. TC_FACTOR = 2: two FP32 kernels that sum in different orders differ
  in error by well under 2x (the same sqrt(K) * u law), while each bit of precision given up
  doubles the error, so 2x admits FP32-class results and nothing a bit coarser. err_ref is floored
  at UNIT_ROUNDOFF: the output itself is FP32, and at tiny K an exact product can make cuBLAS's
  error 0, which no FP32 result can be required to beat.

The input sets (input_sets): every contract is checked on random_inputs, uniform in [-1, 1]; fp32-tc
also on wide_inputs, the same values with their exponents spread over 2^+-20 across and within rows
and columns (widen), judged alike against their own float64 product and FP32's error on them. On
uniform inputs every value of a row has about the same exponent, which hides the weakness of a scheme
that scales a whole row at once (the Ozaki scheme's: a value far below its row's largest keeps few
bits) and any mix-up of one row's scale with another's; an FP32 product rounds each value alike, so
the wide set holds a kernel to FP32-class accuracy where FP32 itself has it. The fp32 contract needs
no second set: FP32 arithmetic rounds every value relative to itself, whatever its exponent, and its
check only looks for bugs.
"""
from __future__ import annotations

from typing import Callable, Mapping

import numpy as np

from autotune.space import Value

TOLERANCE = 1e-4
TC_FACTOR = 2.0
UNIT_ROUNDOFF = 2.0**-24
WIDE_EXPONENT = 20  # the wide inputs' powers of two: 2^-20 to 2^20 (widen)
ELEMENT_FACTOR = 2.0  # the elementwise bound's c: the kernel's rounding and an FP32 reference's
FP32, FP32_TC = "fp32", "fp32-tc"  # the contracts' names, as families.PRECISIONS spells them
UNIFORM, WIDE = "uniform", "wide"  # the input sets' names (INPUT_SETS), as reasons say them


def judge(precision: str, err: float, err_ref: float | None = None, inputs: str = UNIFORM) -> str | None:
    """Why a result breaks its contract, in one line (None: it passes). err_ref: the FP32
    reference's own error against float64 (needed by fp32-tc only); inputs: the input set both
    errors were measured on (INPUT_SETS), which fp32-tc's reason names."""
    if precision == FP32_TC:
        if err_ref is None:
            raise ValueError("the fp32-tc contract needs cuBLAS FP32's error (err_ref)")
        bound = TC_FACTOR * max(err_ref, UNIT_ROUNDOFF)
        if err <= bound:
            return None
        return (f"relative error {err:.3g} > {TC_FACTOR:g} x FP32's {err_ref:.3g} against float64 on {inputs} "
                f"inputs ({err / max(err_ref, UNIT_ROUNDOFF):.3g}x; contract fp32-tc)")
    return None if err <= TOLERANCE else f"relative error {err:.3g} > {TOLERANCE:g}"


def element_bound(scale: np.ndarray | float, K: int) -> np.ndarray | float:
    """How far an FP32 output may lie from the reference: ELEMENT_FACTOR * K * u * (|A| . |B|)."""
    return ELEMENT_FACTOR * K * UNIT_ROUNDOFF * scale


def element_text(row: int, col: int, err: float, bound: float) -> str:
    """The reason a result breaks the elementwise bound, naming its worst element."""
    return (f"C[{row}][{col}] off by {err:.3g} > {bound:.3g} = {ELEMENT_FACTOR:g} K u (|A|.|B|) there "
            f"({err / bound if bound > 0 else float('inf'):.3g}x; one output wrong beyond rounding)")


def element_violation(C: np.ndarray, ref: np.ndarray, scale: np.ndarray, K: int, precision: str) -> str | None:
    """Where C breaks the elementwise bound (the element furthest beyond it, relative to its own
    bound), in one line; None where it holds or for the fp32-tc contract, which it does not model."""
    if precision == FP32_TC:
        return None
    err = np.abs(np.asarray(C, dtype=np.float64) - ref)
    bound = np.asarray(element_bound(scale, K))  # an array: `scale` is one
    ratio = np.divide(err, bound, out=np.where(err > 0, np.inf, 0.0), where=bound > 0)
    worst = int(np.argmax(ratio))
    if not ratio.flat[worst] > 1:
        return None
    i, j = np.unravel_index(worst, ratio.shape)
    return element_text(int(i), int(j), float(err[i, j]), float(bound[i, j]))


def abs_product(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """|A| . |B| in float64: the scale of each output's elementwise bound."""
    return np.abs(np.asarray(A, dtype=np.float64)) @ np.abs(np.asarray(B, dtype=np.float64))


def reference(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """A @ B in float64: the exact-enough answer every kernel is compared against."""
    return np.asarray(A, dtype=np.float64) @ np.asarray(B, dtype=np.float64)


def contract_text(row: Mapping[str, object]) -> str:
    """The contract a result row was verified under, with its errors, for `best` and the report.
    A row without the column predates the contracts: it was checked as fp32 is today."""
    err, err_ref = row.get("err"), row.get("err_ref")
    if row.get("precision") == FP32_TC and isinstance(err, float) and isinstance(err_ref, float):
        ratio = err / max(err_ref, UNIT_ROUNDOFF)
        return (f"contract fp32-tc: error {err:.3g} against float64, {ratio:.2f}x cuBLAS FP32's {err_ref:.3g} "
                f"(at most {TC_FACTOR:g}x)")
    measured = f"error {err:.3g} against the FP32 reference " if isinstance(err, float) else ""
    return f"contract {row.get('precision') or FP32}: {measured}(at most {TOLERANCE:g})"


def transposes(params: Mapping[str, Value]) -> tuple[bool, bool]:
    """(TA, TB) of a config's values: whether its kernel reads A, B stored transposed (absent: not)."""
    return bool(params.get("TA", 0)), bool(params.get("TB", 0))


def stored(A: np.ndarray, B: np.ndarray, params: Mapping[str, Value]) -> tuple[np.ndarray, np.ndarray]:
    """The operands as a kernel of this layout reads them: A (M x K) and B (K x N) themselves, or
    with TA=1 A's transpose (K x M) and with TB=1 B's (N x K), row-major. The product a kernel
    must compute is A @ B (`reference`) whatever the layout."""
    ta, tb = transposes(params)
    return (np.ascontiguousarray(A.T) if ta else A), (np.ascontiguousarray(B.T) if tb else B)


def relative_error(C: np.ndarray, ref: np.ndarray) -> float:
    """||C - ref||_F / ||ref||_F; inf if C has the wrong shape or any NaN or inf."""
    if C.shape != ref.shape or not np.all(np.isfinite(C)):
        return float("inf")
    diff = np.linalg.norm(np.asarray(C, dtype=np.float64) - np.asarray(ref, dtype=np.float64))
    scale = np.linalg.norm(np.asarray(ref, dtype=np.float64))
    return float(diff / scale) if scale > 0 else float(diff)  # all-zero reference: absolute


def fp32_error(A: np.ndarray, B: np.ndarray, ref: np.ndarray) -> float:
    """The host's stand-in for cuBLAS FP32's error: numpy's float32 product (a BLAS SGEMM, FP32
    arithmetic) against the float64 reference `ref` of the same inputs."""
    return relative_error(np.asarray(A, dtype=np.float32) @ np.asarray(B, dtype=np.float32), ref)


def random_inputs(M: int, N: int, K: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A (M x K) and B (K x N), float32 uniform in [-1, 1] (never zeros, which hide unwritten
    outputs), the same for the same seed and shape."""
    rng = np.random.default_rng([seed, M, N, K])
    A = rng.uniform(-1.0, 1.0, size=(M, K)).astype(np.float32)
    B = rng.uniform(-1.0, 1.0, size=(K, N)).astype(np.float32)
    return A, B


def widen(A: np.ndarray, B: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A and B with their exponents spread over 2^-WIDE_EXPONENT to 2^WIDE_EXPONENT: each row of A and
    column of B times 2^r, and each element times a further 2^e, r and e integers uniform in that range
    (the same for the same seed and shapes). Exact: a power of two only moves the exponent, and values
    of at most 2^40 times [-1, 1] stay far inside FP32's normal range.
    Both parts, because each alone is too easy for some kernel. A power of two per row of A and per
    column of B moves C's rows and columns apart, which a kernel with a per-row scale must carry (one
    row's shift used for another's is wrong by far); but the Ozaki scheme's scaling and 3xTF32's split
    take such a power out exactly, so alone it changes no output's relative error, only which outputs
    weigh most in the norm (tests/test_verify_wide.py: Ozaki's output just scales). The
    power per element spreads a row of A (and a column of B) within itself: the values far below the
    row's largest then keep few of the p bits a per-row scale gives them, which an Ozaki kernel with
    too few moduli cannot hide, while an FP32 product rounds every value alike (docs/ozaki.md)."""
    (M, K), N = A.shape, B.shape[1]
    rng = np.random.default_rng([seed, M, N, K, 1])  # 1: a stream apart from random_inputs' own

    def powers(rows: int, cols: int) -> np.ndarray:  # int8, not int64: an eighth of the memory at 16384^2
        return rng.integers(-WIDE_EXPONENT, WIDE_EXPONENT + 1, size=(rows, cols), dtype=np.int8)

    a = np.ldexp(np.ldexp(np.asarray(A, dtype=np.float32), powers(M, 1)), powers(M, K))
    b = np.ldexp(np.ldexp(np.asarray(B, dtype=np.float32), powers(1, N)), powers(K, N))
    return a, b


def wide_inputs(M: int, N: int, K: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """random_inputs(M, N, K, seed) widened (`widen`): the fp32-tc contract's second input set."""
    return widen(*random_inputs(M, N, K, seed), seed)


Inputs = Callable[[int, int, int, int], tuple[np.ndarray, np.ndarray]]  # (M, N, K, seed) -> (A, B)
INPUT_SETS: dict[str, Inputs] = {UNIFORM: random_inputs, WIDE: wide_inputs}


def input_sets(precision: str) -> tuple[str, ...]:
    """The input sets a contract is verified on, in order (the first set's errors are a passing row's)."""
    return (UNIFORM, WIDE) if precision == FP32_TC else (UNIFORM,)
