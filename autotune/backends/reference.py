"""Correctness: the float64 reference, the relative Frobenius error and the bound a variant must meet.

Tolerance. A float32 sum of K products rounds at every step, with unit roundoff
u = 2**-24 ~ 6e-8. With inputs uniform in [-1, 1] the rounding errors have random signs
and grow like a random walk, so the relative (Frobenius) error of an FP32 result against
a float64 reference is about sqrt(K) * u: ~2e-6 at K = 1024, ~8e-6 at K = 16384. The
worst case, K * u, stays under 1e-4 up to K ~ 1600. A real bug is far larger: leaving one
of K terms out of every output costs ~1/sqrt(K) (3e-2 at K = 1024), a wrong tile ~1. So
TOLERANCE = 1e-4 sits well above rounding and well below any systematic error. (A single
wrong output among very many is diluted by the norm; the NaN poisoning of C catches the
commonest such bug, an output never written.)
"""
from __future__ import annotations

from typing import Mapping

import numpy as np

from autotune.space import Value

TOLERANCE = 1e-4


def reference(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """A @ B in float64: the exact-enough answer every kernel is compared against."""
    return np.asarray(A, dtype=np.float64) @ np.asarray(B, dtype=np.float64)


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


def random_inputs(M: int, N: int, K: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A (M x K) and B (K x N), float32 uniform in [-1, 1] (never zeros, which hide unwritten
    outputs), the same for the same seed and shape."""
    rng = np.random.default_rng([seed, M, N, K])
    A = rng.uniform(-1.0, 1.0, size=(M, K)).astype(np.float32)
    B = rng.uniform(-1.0, 1.0, size=(K, N)).astype(np.float32)
    return A, B
