"""What the naive and tiled families share: block sizes, the warp direction, the thread limit."""
from __future__ import annotations

from autotune.space import Constraint, Limits, Params

POW2_BLOCK = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
X_OVER = ("cols", "rows")


def _threads_ok(p: Params, lim: Limits) -> bool:
    return p["bx"] * p["by"] <= lim.max_threads_per_block


THREADS = Constraint("threads per block bx*by must not exceed the device limit (1024)", ("bx", "by"), _threads_ok)
