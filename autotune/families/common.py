"""What the families share: block sizes, the warp direction and the thread limit (naive, tiled); the
HIP export's reason for 32-lane waves and the DRAM traffic of an operand-tile kernel (the others)."""
from __future__ import annotations

from autotune.space import Constraint, HipSupport, Limits, Params

POW2_BLOCK = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
X_OVER = ("cols", "rows")


def _threads_ok(p: Params, lim: Limits) -> bool:
    return p["bx"] * p["by"] <= lim.max_threads_per_block


THREADS = Constraint("threads per block bx*by must not exceed the device limit (1024)", ("bx", "by"), _threads_ok)

# HIP: every kernel synchronises with __syncthreads() and reads no lane outside a wave of 32 or 64, but
# these were written and tuned for 32-lane warps (coalescing, bank conflicts, shuffle widths).
WAVE32 = HipSupport("its threads are laid out in 32-lane warps (warp tiles or shuffle groups, tuned for that width)")


def tile_intensity(BM: int, BN: int, parts: int = 1) -> float:
    """FLOP per DRAM byte of a BM x BN output tile: per k, (BM + BN) floats of `parts` pieces each
    (tf32x3wg reads each operand as a big and a small part) for 2*BM*BN FLOP."""
    return BM * BN / (2 * parts * (BM + BN))
