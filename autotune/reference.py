"""Correctness: relative Frobenius error and the bound a variant must meet.

FP32 accumulation of K products differs from any other FP32 order (cuBLAS) or from float64
by roughly sqrt(K) * 2**-24 relative, about 4e-6 at K = 4096. TOLERANCE = 1e-4 leaves a wide
margin for that rounding while a real bug (a missed k-slice, a wrong tail, a race) gives
errors of 1e-2 and more. NaN anywhere (an output never written) is an infinite error.
"""
from __future__ import annotations

import numpy as np

TOLERANCE = 1e-4


def relative_error(C: np.ndarray, ref: np.ndarray) -> float:
    if not np.all(np.isfinite(C)):
        return float("inf")
    ref64 = ref.astype(np.float64)
    denom = np.linalg.norm(ref64)
    diff = np.linalg.norm(C.astype(np.float64) - ref64)
    return float(diff / denom) if denom > 0 else float(diff)


def random_inputs(M: int, N: int, K: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Fresh uniform [-1, 1) inputs: never zeros, which hide unwritten outputs."""
    rng = np.random.default_rng(seed)
    A = rng.uniform(-1.0, 1.0, size=(M, K)).astype(np.float32)
    B = rng.uniform(-1.0, 1.0, size=(K, N)).astype(np.float32)
    return A, B
