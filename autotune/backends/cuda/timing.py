"""How a kernel (or cuBLAS) is timed: CUDA events around one run, repeated until the median settles.

Each timed run starts behind a head start: a one-thread kernel that holds the stream for
HEAD_START_US of GPU time. The host enqueues the start event and the run's launches while that
kernel waits, so the events bracket the GPU's work and not Python's launch path (about 10-20 us a
launch through cuda.core or ctypes, which is most of a 256^3 product's time). cuBLAS and every
kernel are timed the same way; METHOD.md's advice for short launches (a graph) has the same aim.

Given a meter (energy.Meter: NVML), the timed runs are followed by a burst of the same runs back to
back that reads the board's average power (energy.burst_watts): the Timing's watts, else None.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from autotune.backends.cuda.energy import Meter, burst_watts
from autotune.backends.outcome import Timing

TIME_BUDGET_MS = 600.0  # stop repeating once this much kernel time was measured...
MIN_REPS, MAX_REPS = 3, 20  # ...but never fewer than MIN_REPS timed runs
# untimed runs first: the verify launch at the search shape has already loaded the module and
# woken the clocks, so one more is enough (slow naive kernels take 0.3 s a run)
WARMUP = 1
SETTLE_REPS, SETTLE_SPREAD = 5, 0.01  # ...and stop early once 5 runs agree within 1%
# Longer than the host takes to enqueue any config's launches (a prologue and a product: under
# 0.1 ms, benchmarks/launch_gap.py), short beside the compile each trial already waits for.
HEAD_START_US = 500

HEAD_START_NAME = "autotune_head_start"
HEAD_START_SOURCE = r"""
extern "C" __global__ void autotune_head_start(unsigned long long ns)
{
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < ns);
}
"""


def nothing() -> None:
    pass


class HeadStart:
    """Enqueues the waiting kernel on a stream (kernel: HEAD_START_SOURCE loaded)."""

    def __init__(self, kernel, stream, us: int = HEAD_START_US):
        self.kernel, self.stream, self.ns = kernel, stream, np.uint64(us * 1000)

    def __call__(self) -> None:
        from cuda.core import LaunchConfig, launch

        launch(self.stream, LaunchConfig(grid=(1, 1, 1), block=(1, 1, 1)), self.kernel, self.ns)


def time_ms(run: Callable[[], object], stream, min_reps: int = MIN_REPS, max_reps: int = MAX_REPS,
            tick: Callable[[], None] = nothing, head_start: Callable[[], None] = nothing,
            meter: Meter | None = None) -> Timing:
    """Median of repeated event-timed runs, after warm-up (module load, clocks ramping).
    head_start() is enqueued before each run's start event (HeadStart: the launch path out of the
    time); tick() after each synchronised run tells a watchdog that launches still finish.
    meter: the board's power is read after the timed runs (the Timing's watts; None without one)."""
    from cuda.core import EventOptions

    opts = EventOptions(timing_enabled=True)
    for _ in range(WARMUP):
        run()
    times: list[float] = []

    def enough() -> bool:
        return len(times) >= min_reps and (sum(times) >= TIME_BUDGET_MS or settled(times))

    while len(times) < max_reps and not enough():
        head_start()
        start = stream.record(options=opts)
        run()
        end = stream.record(options=opts)
        end.sync()
        times.append(end - start)
        tick()
    return powered(Timing.of(times), run, stream, meter, tick)


def powered(timing: Timing, run: Callable[[], object], stream, meter: Meter | None,
            tick: Callable[[], None] = nothing) -> Timing:
    """The timing with the board's average watts while `run` repeats (energy.burst_watts); as it was
    without a meter."""
    if meter is None:
        return timing
    return replace(timing, watts=burst_watts(run, stream, timing.median_ms, meter, tick))


def settled(times: list[float]) -> bool:
    """Repeat only as long as the spread requires: stop once the last SETTLE_REPS runs lie
    within SETTLE_SPREAD of their median (more runs would not move the median)."""
    if len(times) < SETTLE_REPS:
        return False
    last = sorted(times[-SETTLE_REPS:])
    return (last[-1] - last[0]) <= SETTLE_SPREAD * last[len(last) // 2]
