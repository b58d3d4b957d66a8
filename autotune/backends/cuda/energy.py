"""The board's average power while a kernel (or cuBLAS) runs, read through NVML right after its timed
runs (timing.time_ms): the row's `watts`, and with its rate `gflops_per_watt`.

Why a burst of its own rather than the timed runs: those last a few milliseconds in all for most
kernels (five runs that agree within 1% end the timing), each behind a 0.5 ms head start that holds
the stream with one thread and after a synchronisation; the board's power over them would be largely
the head start's and the host's gaps', and they are far shorter than the counter's step.

The counter. nvmlDeviceGetTotalEnergyConsumption gives the board's energy since the driver loaded,
in millijoules, on Volta and newer. It does not advance continuously but in steps, every 20-100 ms
on recent GPUs (PETSc's manual page PetscLogGpuEnergyMeter; NVML's own reference states no period),
and on A100 and H100 a step's energy is taken from part of the interval it covers (about 25 ms of
each 100 ms: Yang et al., "Part-time Power Measurements", SC24). A value read at any moment is stale
by up to a step, so the delta of two reads around a short interval is noise. Hence the burst:
- it runs the same launches back to back, a few milliseconds of them queued ahead, so the GPU stays
  busy with a steady load while the host polls the counter;
- it notes the first step it sees, and the first step at least MIN_WINDOW_MS after that one;
  watts = energy between the two steps / host time between seeing them. Both ends are steps, so a
  read's staleness cancels; what is left is the polling delay, microseconds against the window;
- no two such steps within MAX_BURST_MS (a counter too coarse or stuck), a read that NVML refuses,
  or a GPU idle for more than a fifth of the burst (runs shorter than the host's launch path: the
  board's power is then not the kernel's) leave watts None, NULL in the row: no number, not noise.
Boards without the counter but with nvmlDeviceGetPowerUsage (before Volta) get the mean of that
reading, sampled while the burst polls, over MIN_WINDOW_MS; it is instantaneous on those boards (on
Ampere and newer but GA100 it is a 1 s average, which is why the counter is preferred).

What it costs: the wait for a first step and the window, about 0.1-0.2 s a trial where the counter
steps every 100 ms: on the H200 the default search at 4096^3 took 34.3 s with it against 25.4 without.
So it is read only where asked: AUTOTUNE_ENERGY=1 in the environment; elsewhere every watts is NULL.
"""
from __future__ import annotations

import ctypes
import math
import os
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from autotune.backends.cuda import nvml

STEP_MS = 100  # the slowest step of the energy counter reported for recent GPUs (see above)
MIN_WINDOW_MS = 50  # watts only between two steps at least this far apart (at most STEP_MS: one step)
MAX_BURST_MS = 1000  # give up (None) when no such pair of steps was seen by then: ten of the slowest steps
# GPU work kept queued while the host polls, so the GPU never waits for it: on the H200's host an energy read
# took several milliseconds (with 5 ms queued, no run under 4.6 ms read a power: the GPU idled)
AHEAD_MS = 25.0
# ...refilled at most this much host time between polls: a poll late by the refill moves the step it sees, and
# the window is MIN_WINDOW_MS (1 ms in 50: 2%)
FILL_S = 0.001
BEAT_S = 0.1  # tick() at most this often: a worker's tick is a message to its parent's watchdog
MIN_BUSY = 0.8  # the share of the burst the GPU must spend on the runs for the power to be theirs
SWITCH = "AUTOTUNE_ENERGY"  # "1": read the power; anything else (or unset): none


def nothing() -> None:
    pass


@dataclass(frozen=True)
class Reading:
    mj: int  # the counter, millijoules
    s: float  # when it was seen, seconds (the host's clock)


def watts_between(first: Reading, last: Reading, min_s: float = MIN_WINDOW_MS / 1000) -> float | None:
    """Average watts between two readings of the energy counter; None where they are closer than
    min_s (shorter than the counter resolves) or the counter did not advance."""
    seconds = last.s - first.s
    if seconds < min_s or last.mj <= first.mj:
        return None
    return (last.mj - first.mj) / 1000.0 / seconds


def mean_watts(samples_mw: list[int], seconds: float, min_s: float = MIN_WINDOW_MS / 1000) -> float | None:
    """The mean of power readings (milliwatts) taken over `seconds`; None over too short a time."""
    if seconds < min_s or len(samples_mw) < 2:
        return None
    return sum(samples_mw) / len(samples_mw) / 1000.0


class Meter:
    """One GPU's power through NVML: its energy counter (`counter`) or, without one, its power reading."""

    def __init__(self, lib: Any, device: Any, counter: bool = True):
        self.lib, self.device, self.counter = lib, device, counter

    @staticmethod
    def open(uuid: str) -> Meter | None:
        """The device's meter, or None: no NVML, a device it does not know, neither reading supported
        (a MIG instance, a virtual GPU), or AUTOTUNE_ENERGY not 1. Silent: the rows' watts stay NULL."""
        if os.environ.get(SWITCH) != "1":
            return None
        lib, device = nvml.library(), nvml.handle(uuid)
        if lib is None or device is None:
            return None
        meter = Meter(lib, device)
        if meter.energy_mj() is not None:
            return meter
        meter.counter = False
        return meter if meter.power_mw() is not None else None

    def energy_mj(self) -> int | None:
        value = ctypes.c_ulonglong()
        if self.lib.nvmlDeviceGetTotalEnergyConsumption(self.device, ctypes.byref(value)) != nvml.SUCCESS:
            return None
        return int(value.value)

    def power_mw(self) -> int | None:
        value = ctypes.c_uint()
        if self.lib.nvmlDeviceGetPowerUsage(self.device, ctypes.byref(value)) != nvml.SUCCESS:
            return None
        return int(value.value)

    def watch(self, clock: Callable[[], float]) -> Steps | Samples:
        return Steps(self, clock) if self.counter else Samples(self, clock)


class Steps:
    """The energy counter polled for its steps: the first seen, then the first MIN_WINDOW_MS after it."""

    def __init__(self, meter: Meter, clock: Callable[[], float]):
        self.meter, self.clock = meter, clock
        self.last = meter.energy_mj()
        self.first: Reading | None = None
        self.final: Reading | None = None

    @property
    def done(self) -> bool:
        return self.final is not None

    def poll(self) -> bool:
        """One read; False where NVML refused it."""
        mj = self.meter.energy_mj()
        if mj is None or self.last is None:
            return False
        if mj != self.last:
            seen = Reading(mj, self.clock())
            if self.first is None:
                self.first = seen
            elif seen.s - self.first.s >= MIN_WINDOW_MS / 1000:
                self.final = seen
        self.last = mj
        return True

    def watts(self) -> float | None:
        return watts_between(self.first, self.final) if self.first and self.final else None


class Samples:
    """The power reading sampled at each poll, for MIN_WINDOW_MS (boards without the counter)."""

    def __init__(self, meter: Meter, clock: Callable[[], float]):
        self.meter, self.clock = meter, clock
        self.began, self.samples_mw = clock(), list[int]()

    @property
    def done(self) -> bool:
        return self.clock() - self.began >= MIN_WINDOW_MS / 1000 and len(self.samples_mw) >= 2

    def poll(self) -> bool:
        mw = self.meter.power_mw()
        if mw is None:
            return False
        self.samples_mw.append(mw)
        return True

    def watts(self) -> float | None:
        return mean_watts(self.samples_mw, self.clock() - self.began) if self.done else None


def burst_watts(run: Callable[[], object], stream, run_ms: float, meter: Meter, tick: Callable[[], None] = nothing,
                clock: Callable[[], float] | None = None) -> float | None:
    """The board's average watts while `run` (one run takes run_ms on the GPU) repeats back to back
    on `stream`, or None (see the module's doc). tick() as runs finish (at most every BEAT_S: the
    watchdog's limit is seconds), as time_ms does; clock: the host's seconds (time.perf_counter)."""
    from cuda.core import EventOptions

    clock = clock or time.perf_counter
    timed = EventOptions(timing_enabled=True)
    ahead = max(2, math.ceil(AHEAD_MS / max(run_ms, 1e-6)))
    queue: deque = deque()  # an event after each run not yet seen done
    runs, watch = 0, meter.watch(clock)
    start, began = stream.record(options=timed), clock()
    ticked = began
    while not watch.done and clock() - began < MAX_BURST_MS / 1000:
        filled = clock()
        while len(queue) < ahead and clock() - filled < FILL_S:
            run()
            runs += 1
            queue.append(stream.record())
        while queue and queue[0].is_done:
            queue.popleft()
            if clock() - ticked >= BEAT_S:
                tick()
                ticked = clock()
        if not watch.poll():
            break
    end = stream.record(options=timed)
    end.sync()
    busy = runs * run_ms / max(end - start, 1e-9)
    return watch.watts() if busy >= MIN_BUSY else None
