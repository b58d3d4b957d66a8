"""Timing with CUDA events, shared by the benchmark scripts that compare against torch.matmul."""
from __future__ import annotations

from typing import Any, Callable


def time_ms(torch: Any, run: Callable[[], object], reps: int = 20, rounds: int = 5, warmup: int = 3) -> float:
    """Milliseconds per call: CUDA events around `reps` back-to-back calls on the current stream,
    after `warmup` calls; the best round's mean of `rounds`."""
    for _ in range(warmup):
        run()
    best = float("inf")
    for _ in range(rounds):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(reps):
            run()
        end.record()
        end.synchronize()
        best = min(best, start.elapsed_time(end) / reps)
    return best
