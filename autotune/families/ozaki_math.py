"""The Ozaki scheme II in numpy: FP32-accurate GEMM from exact products of INT8 residues.

The reference the `ozaki` family's CUDA kernel must match step for step (docs/ozaki.md says why
each step is exact); not a family itself, and nothing here touches a GPU. For t moduli m_i:

1. scale: each row of A and column of B by a power of two so that its largest |value| lies in
   [2^(p-1), 2^p), p = bits(t, K); round to integers a', b' (ties to even). Or (scale=SCALE_NORM) so
   that the Euclidean norm of the rounded row (column) is at most 2^q, q = norm_bits(t): by
   Cauchy-Schwarz |sum a'b'| <= ||a'|| ||b'|| <= 4^q < M_t / 2, a bound that K does not enter and
   that random rows meet with about log2(sqrt(K)) / 2 + 1 more bits than their largest value allows.
2. residues: a' mod m_i and b' mod m_i in the symmetric range [-(m_i-1)/2, (m_i-1)/2] (int8).
3. one INT8 product per modulus, P_i = R_A,i @ R_B,i, exact (int32 in the kernel: K <= MAX_K).
4. Garner: the c_i = P_i mod m_i give x = sum a'b' mod M_t in [0, M_t) (uint64), then signed.
5. back: C = float32(float64(x) * 2^-(s_i + s_j)).

The only error is step 1's rounding (and the FP32 output's own): steps 2-4 are exact because
|sum a'b'| <= K 4^p < M_t / 2 (bits), or <= 4^q < M_t / 2 (norm_bits, norm_shifts).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

# Pairwise coprime and odd, so each residue's symmetric range fits int8 (|r| <= 127); 255 = 3*5*17
# and 253 = 11*23 are composite but share no factor with the others. The product of all 8 is
# about 2^63.4, so x in [0, M_t) fits one uint64.
MODULI: tuple[int, ...] = (255, 253, 251, 247, 241, 239, 233, 229)
MIN_MODULI, MAX_MODULI = 2, 8
MAX_BITS = 30  # the kernel holds a', b' in int32, and |a'| <= 2^p
RESIDUE_MAX = (max(MODULI) - 1) // 2  # 127: the largest |residue|
# The kernel sums K products of residues in int32: exact while K * 127^2 <= 2^31 - 1. 133144.
MAX_K = (2**31 - 1) // RESIDUE_MAX**2


def check_moduli(t: int) -> None:
    if not MIN_MODULI <= t <= MAX_MODULI:
        raise ValueError(f"ozaki: t = {t} moduli; choose {MIN_MODULI} to {MAX_MODULI}")


def modulus_product(t: int) -> int:
    """M_t, the product of the first t moduli (an odd number < 2^64)."""
    check_moduli(t)
    return math.prod(MODULI[:t])


def bits(t: int, K: int) -> int:
    """The largest p (at most MAX_BITS) with 2 K 4^p < M_t: then |sum over K of a'b'| <= K 4^p
    < M_t / 2, which the symmetric reconstruction returns exactly."""
    M = modulus_product(t)
    if K < 1:
        raise ValueError(f"ozaki: K = {K}; a product needs K >= 1")
    p = 0
    while p < MAX_BITS and 2 * K * 4 ** (p + 1) < M:
        p += 1
    if p < 1:
        raise ValueError(f"ozaki: {t} moduli (M = {M}) cannot hold a sum of K = {K} products of 1-bit operands "
                         f"exactly; use more moduli")
    return p


SCALE_LARGEST, SCALE_NORM = 0, 1  # step 1 by each slice's largest |value| (bits), or by its norm (norm_bits)
# norm_shifts sums squares in units of 4^(e - NORM_UNIT), e the slice's largest exponent: each square rounded up
# to whole units (below 4^NORM_UNIT each, so K of them fit a uint64), an integer sum exact in any order
NORM_UNIT = 20


def norm_bits(t: int) -> int:
    """The largest q (at most MAX_BITS) with 2 * 4^q < M_t: rows and columns of norm at most 2^q have
    |sum a'b'| <= 4^q < M_t / 2, whatever K is."""
    M = modulus_product(t)
    return max(q for q in range(MAX_BITS + 1) if 2 * 4**q < M)


def norm_shifts(X: np.ndarray, q: int, axis: int) -> np.ndarray:
    """The largest s per slice along `axis` (the reduced one) with ||rint(x 2^s)|| <= 2^q; 0 for a zero slice.
    int64. Rounding moves each value by at most 1/2, the slice by at most c/2 (c = ceil(sqrt(K))), so
    2^s ||x|| + c/2 <= 2^q suffices: 4^(s + e - NORM_UNIT + 1) S <= (2^(q+1) - c)^2, where S >= ||x||^2 / 4^(e -
    NORM_UNIT) is the sum of the squares, each rounded up to a whole unit (exact: a float32's square in float64,
    a power-of-two scale, a ceiling, integer sums). The kernel computes the same integers, so the same shifts."""
    K = X.shape[axis]
    S, e = square_units(X, axis)
    c = math.isqrt(K - 1) + 1 if K > 1 else 1  # ceil(sqrt(K))
    R = (2 ** (q + 1) - c) ** 2
    return np.array([_norm_shift(int(s), int(ei), R) for s, ei in zip(S.ravel(), e.ravel())], dtype=np.int64)


def square_units(X: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """(S, e) per slice along `axis`: e the frexp exponent of its largest |value| (0 for a zero slice), S
    (uint64) the sum of its squares in units of 4^(e - NORM_UNIT), each square rounded up to whole units, so
    S >= ||x||^2 / 4^(e - NORM_UNIT) > S - K."""
    _, e = np.frexp(np.max(np.abs(X), axis=axis))
    e = np.asarray(e, dtype=np.int64)
    units = np.ceil(np.ldexp(X.astype(np.float64) ** 2, np.expand_dims(2 * (NORM_UNIT - e), axis)))
    return units.astype(np.uint64).sum(axis=axis, dtype=np.uint64), e


def _norm_shift(S: int, e: int, R: int) -> int:
    """s = u + NORM_UNIT - 1 - e for the largest integer u with 4^u S <= R (0 where S = 0: a zero slice)."""
    if S == 0:
        return 0
    u = (R.bit_length() - S.bit_length()) // 2 + 1  # at most one or two too large
    while not (S << 2 * u <= R if u >= 0 else S <= R << -2 * u):
        u -= 1
    return u + NORM_UNIT - 1 - e


def check_finite(X: np.ndarray, name: str) -> None:
    # Residues of inf or NaN do not exist; the kernel writes garbage there and verification marks it.
    if not np.all(np.isfinite(X)):
        raise ValueError(f"ozaki: {name} has inf or NaN values, which the scheme cannot carry")


def shifts(X: np.ndarray, p: int, axis: int) -> np.ndarray:
    """p - e per slice along `axis` (the reduced one), e the frexp exponent of the slice's largest
    |value| (largest = f 2^e, f in [0.5, 1)); an all-zero slice has e = 0. int64."""
    _, e = np.frexp(np.max(np.abs(X), axis=axis))  # frexp(0) = (0, 0)
    return p - np.asarray(e, dtype=np.int64)


def row_shifts(A: np.ndarray, p: int) -> np.ndarray:
    """s_i for each row of A (M x K)."""
    return shifts(A, p, axis=1)


def col_shifts(B: np.ndarray, p: int) -> np.ndarray:
    """s_j for each column of B (K x N)."""
    return shifts(B, p, axis=0)


def scaled(X: np.ndarray, s: np.ndarray, axis: int) -> np.ndarray:
    """rint(X * 2^s) as int64, ties to even (__float2int_rn); `axis` is the axis of X that s runs
    along (0: one shift per row of A, 1: one per column of B). |result| <= 2^p. ldexp in float64 is
    exact for every float32 and shift, so there is one rounding, the kernel's."""
    shape = [1, 1]
    shape[axis] = -1
    return np.rint(np.ldexp(X.astype(np.float64), s.reshape(shape))).astype(np.int64)


def residues(x: np.ndarray, m: int) -> np.ndarray:
    """x mod m in [-(m-1)/2, (m-1)/2], as int8 (m odd, x integers)."""
    x = np.asarray(x, dtype=np.int64)
    if np.all((x > -(2**52)) & (x < 2**52)):
        # The fast way, exact here: x / m in float64 is within 2^-53 |x| / m < 1 / (2m) of its value,
        # which (m odd) is never nearer than 1 / (2m) to a half-integer, so rint gives the nearest q.
        xf = x.astype(np.float64)
        return (xf - m * np.rint(xf / m)).astype(np.int8)
    r = np.mod(x, m)  # [0, m) whatever x's sign
    return np.where(r > m // 2, r - m, r).astype(np.int8)


def modular_product(ra: np.ndarray, rb: np.ndarray) -> np.ndarray:
    """ra @ rb exactly, int64. In float64 (BLAS) for speed: every product and partial sum is an
    integer of magnitude <= K 127^2 < 2^53, so no addition rounds, in any order."""
    K = ra.shape[1]
    if K * RESIDUE_MAX**2 >= 2**53:
        raise ValueError(f"ozaki: K = {K} is beyond the float64-exact product of residues")
    return (ra.astype(np.float64) @ rb.astype(np.float64)).astype(np.int64)


def garner_constants(t: int) -> list[tuple[int, int, int]]:
    """(m_i, prefix_i, inv_i) for i = 0..t-1: prefix_i = m_0...m_{i-1} (1 for i = 0) and
    inv_i = prefix_i^-1 mod m_i (1 for i = 0), so the loop starts from x = 0 with no special case."""
    check_moduli(t)
    return [(m, math.prod(MODULI[:i]), pow(math.prod(MODULI[:i]), -1, m)) for i, m in enumerate(MODULI[:t])]


def garner(cs: Sequence[np.ndarray]) -> np.ndarray:
    """The x in [0, M_t) with x = c_i mod m_i for each i (c_i in [0, m_i)), uint64, t = len(cs).
    Mixed radix: after step i, x < prefix_{i+1} <= M_t < 2^64, so the uint64 sums never wrap."""
    x = np.zeros(np.shape(cs[0]), dtype=np.uint64)
    for (m, prefix, inv), c in zip(garner_constants(len(cs)), cs):
        r = (x % np.uint64(m)).astype(np.int64)
        v = ((np.asarray(c, dtype=np.int64) + m - r) * inv) % m  # +m: nonnegative; < 510 * 255
        x += v.astype(np.uint64) * np.uint64(prefix)
    return x


def signed(x: np.ndarray, t: int) -> np.ndarray:
    """x - M_t where x >= (M_t + 1) / 2, else x, as int64 (M_t is odd: the range is symmetric).
    Like the kernel: a wrapping uint64 subtraction read as int64, exact since |result| < 2^63."""
    M = modulus_product(t)
    wrapped = (x - np.uint64(M)).view(np.int64)  # uint64 arrays wrap, without a warning
    return np.where(x >= np.uint64((M + 1) // 2), wrapped, x.view(np.int64))


def crt_weights(t: int) -> list[int]:
    """W_i = (M_t / m_i) ((M_t / m_i)^-1 mod m_i) for i = 0..t-1: x = sum c_i W_i mod M_t. Each W_i < M_t, because
    the inverse is below m_i."""
    check_moduli(t)
    M = modulus_product(t)
    return [M // m * pow(M // m, -1, m) for m in MODULI[:t]]


def crt_signed(cs: Sequence[np.ndarray]) -> np.ndarray:
    """signed(garner(cs), t), t = len(cs), by ozakiwg's arithmetic: the CRT sum S = sum c_i W_i in two uint64 halves,
    its nearest multiple of M_t from doubles, and one correction; two multiply-adds a modulus where Garner's step
    takes about eighteen instructions.

    lo = sum c_i (W_i mod 2^32) and hi = sum c_i (W_i div 2^32) are below 8 * 255 * 2^32 < 2^43, so S = hi 2^32 +
    lo is exact in them. Its quotient by M_t, S / M_t < sum c_i < 2^11, from doubles (hi 2^32 exact, one rounding
    in the sum, in 1 / M_t and in the product: relative error under 2^-50.9) is within 2^-39 of the true one, so
    q = rint of it is the nearest integer to S / M_t, or one off where that lies within 2^-39 of a half. Then
    y = S - q M_t, in (-M_t / 2, M_t / 2) or past that edge by under 2^-38 M_t: below 2^63 in magnitude, so the
    wrapping uint64 arithmetic read as int64 is exact, and adding or subtracting M_t once brings it into the
    symmetric range [-(M_t - 1) / 2, (M_t - 1) / 2] (M_t is odd), where x's symmetric value lies."""
    t = len(cs)
    M = modulus_product(t)
    lo = np.zeros(np.shape(cs[0]), dtype=np.uint64)
    hi = np.zeros_like(lo)
    for w, c in zip(crt_weights(t), cs):
        c64 = np.asarray(c, dtype=np.uint64)
        lo += c64 * np.uint64(w & 0xFFFFFFFF)
        hi += c64 * np.uint64(w >> 32)
    estimate = hi.astype(np.float64) * 2.0**32 + lo.astype(np.float64)
    q = np.rint(estimate * (1.0 / float(M))).astype(np.uint64)
    y = ((hi << np.uint64(32)) + lo - q * np.uint64(M)).view(np.int64)  # uint64 arrays wrap, without a warning
    return correct_symmetric(y, t)


def correct_symmetric(y: np.ndarray, t: int) -> np.ndarray:
    """y past the symmetric range by less than M_t brought back into it: y - M_t above (M_t - 1) / 2, y + M_t below
    -(M_t - 1) / 2 (wrapping uint64 steps read as int64: exact, the result is in range)."""
    M = modulus_product(t)
    half, u = np.int64((M - 1) // 2), y.view(np.uint64)
    return np.where(y > half, (u - np.uint64(M)).view(np.int64), np.where(y < -half, (u + np.uint64(M)).view(np.int64), y))


def to_float32(xs: np.ndarray, s_row: np.ndarray, s_col: np.ndarray) -> np.ndarray:
    """float32(float64(xs) * 2^-(s_i + s_j)). float64(xs) rounds where |xs| > 2^53 (relative 2^-53,
    far below the scaling's error: docs/ozaki.md); the ldexp is exact (s = p - e with e in [-148, 128],
    so s_i + s_j is within [-254, 356] and |xs| < 2^63: no float64 overflow or subnormal), then one
    rounding to float32; a result beyond FP32's range is inf, as SGEMM's."""
    with np.errstate(over="ignore"):
        return np.ldexp(xs.astype(np.float64), -(s_row[:, None] + s_col[None, :])).astype(np.float32)


@dataclass(frozen=True)
class OzakiSteps:
    """Every intermediate of one product, for tests and for checking the kernel's pieces."""
    t: int
    p: int
    s_row: np.ndarray  # int64, M
    s_col: np.ndarray  # int64, N
    a_int: np.ndarray  # int64, M x K, |a'| <= 2^p
    b_int: np.ndarray  # int64, K x N
    products: list[np.ndarray]  # P_i, int64 M x N, one per modulus
    cs: list[np.ndarray]  # P_i mod m_i in [0, m_i), int64
    x: np.ndarray  # uint64 in [0, M_t)
    x_signed: np.ndarray  # int64, = sum over k of a'b' exactly
    C: np.ndarray  # float32


def check_operands(A: np.ndarray, B: np.ndarray) -> None:
    # float32 only: rounding wider inputs here would hide an error the kernel's caller must see.
    if A.dtype != np.float32 or B.dtype != np.float32:
        raise ValueError(f"ozaki: operands must be float32, not {A.dtype} and {B.dtype}")
    if A.ndim != 2 or B.ndim != 2 or A.shape[1] != B.shape[0]:
        raise ValueError(f"ozaki: shapes {A.shape} and {B.shape} do not multiply")
    if A.shape[1] > MAX_K:
        raise ValueError(f"ozaki: K = {A.shape[1]} > MAX_K = {MAX_K}: the kernel's int32 sums of K products "
                         f"of residues (|r| <= {RESIDUE_MAX}) could overflow")
    check_finite(A, "A")
    check_finite(B, "B")


def ozaki_steps(A: np.ndarray, B: np.ndarray, t: int, scale: int = SCALE_LARGEST) -> OzakiSteps:
    """A @ B (float32 M x K and K x N) with t moduli, keeping every step; scale: SCALE_LARGEST or SCALE_NORM
    (step 1 of the module's docstring). p: the bits of the scaled operands' bound (bits, or norm_bits)."""
    check_operands(A, B)
    if scale == SCALE_NORM:
        p = norm_bits(t)
        s_row, s_col = norm_shifts(A, p, axis=1), norm_shifts(B, p, axis=0)
    else:
        p = bits(t, A.shape[1])
        s_row, s_col = row_shifts(A, p), col_shifts(B, p)
    a_int, b_int = scaled(A, s_row, axis=0), scaled(B, s_col, axis=1)
    products = [modular_product(residues(a_int, m), residues(b_int, m)) for m in MODULI[:t]]
    cs = [np.mod(P, m) for P, m in zip(products, MODULI)]
    x = garner(cs)
    x_signed = signed(x, t)
    return OzakiSteps(t, p, s_row, s_col, a_int, b_int, products, cs, x, x_signed, to_float32(x_signed, s_row, s_col))


def ozaki_matmul(A: np.ndarray, B: np.ndarray, t: int, scale: int = SCALE_LARGEST) -> np.ndarray:
    """A @ B, float32, by the Ozaki scheme II with t moduli (2-8), scaled by each slice's largest value or norm."""
    return ozaki_steps(A, B, t, scale).C
