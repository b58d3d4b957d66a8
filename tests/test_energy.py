"""The board's power without a GPU: NVML's library faked (the ctypes object that nvml.library()
returns), its energy counter stepping on a fake clock that the fake GPU's runs advance. What is
proved: the arithmetic between two steps, the refusals (a counter coarser than the burst, an idle
GPU, NVML missing or refusing: None, silently), and the columns a row then gets or does not get."""
from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from autotune.backends.cuda import energy, nvml
from autotune.backends.cuda.energy import Meter, Reading, burst_watts, mean_watts, watts_between
from autotune.backends.cuda.timing import time_ms
from autotune.backends.outcome import OK, Outcome, Timing
from autotune.families import TILED
from autotune.search.loop import run_search
from autotune.space import Limits
from tests.fakes import FakeBackend, fake_ms

NOT_SUPPORTED = 3  # NVML_ERROR_NOT_SUPPORTED


class Clock:
    def __init__(self) -> None:
        self.s = 1000.0

    def __call__(self) -> float:
        return self.s


class FakeNvml:
    """libnvidia-ml as ctypes calls it: each function fills the object behind its last argument
    (ctypes.byref) and returns an NVML status; a read costs the host poll_ms. The counter steps
    every step_ms at `watts`."""

    def __init__(self, clock: Clock, watts: float = 300.0, step_ms: float = 20.0, counter: bool = True,
                 power: bool = True, poll_ms: float = 0.02):
        self.clock, self.watts, self.step_ms, self.counter, self.power = clock, watts, step_ms, counter, power
        self.poll_ms = poll_ms

    def nvmlDeviceGetHandleByUUID(self, name, ref) -> int:
        ref._obj.value = 1
        return 0

    def nvmlDeviceGetTotalEnergyConsumption(self, device, ref) -> int:
        if not self.counter:
            return NOT_SUPPORTED
        self.clock.s += self.poll_ms / 1000
        steps = math.floor(self.clock.s * 1000 / self.step_ms)  # the counter as of its last step
        ref._obj.value = int(self.watts * steps * self.step_ms)  # W x ms = mJ
        return 0

    def nvmlDeviceGetPowerUsage(self, device, ref) -> int:
        if not self.power:
            return NOT_SUPPORTED
        self.clock.s += self.poll_ms / 1000
        ref._obj.value = int(self.watts * 1000)
        return 0


class Event:
    """Stamped with the GPU's time (ms) at which the work before it ends; done once the host's clock is past it."""

    def __init__(self, clock: Clock, at_ms: float):
        self.clock, self.at_ms = clock, at_ms

    @property
    def is_done(self) -> bool:
        return self.clock.s * 1000 >= self.at_ms

    def sync(self) -> None:
        self.clock.s = max(self.clock.s, self.at_ms / 1000)

    def __sub__(self, other: Event) -> float:
        return self.at_ms - other.at_ms


class Gpu:
    """A stream: a launch costs the host launch_ms; the GPU runs each run_ms, back to back where they
    were queued in time, else from the launch (idle in between)."""

    def __init__(self, clock: Clock, run_ms: float = 0.5, launch_ms: float = 0.005):
        self.clock, self.run_ms, self.launch_ms = clock, run_ms, launch_ms
        self.free_ms, self.runs = 0.0, 0  # when the GPU is done with what was queued

    def run(self) -> None:
        self.runs += 1
        self.clock.s += self.launch_ms / 1000
        self.free_ms = max(self.free_ms, self.clock.s * 1000) + self.run_ms

    def record(self, options=None) -> Event:
        return Event(self.clock, max(self.free_ms, self.clock.s * 1000))


@pytest.fixture
def fake(monkeypatch):
    """NVML replaced by a FakeNvml on a fake clock: returns (clock, lib)."""
    clock = Clock()
    lib = FakeNvml(clock)
    monkeypatch.setattr(nvml, "_NVML", {"lib": lib})
    monkeypatch.setenv(energy.SWITCH, "1")
    return clock, lib


def burst(clock: Clock, gpu: Gpu, tick=energy.nothing) -> float | None:
    meter = Meter.open("GPU-fake")
    assert meter is not None
    return burst_watts(gpu.run, gpu, gpu.run_ms, meter, tick, clock=clock)


def test_watts_between_two_steps_is_energy_over_time_and_too_short_a_window_is_none():
    assert watts_between(Reading(5_000, 10.0), Reading(35_000, 10.1)) == pytest.approx(300.0)
    assert watts_between(Reading(5_000, 10.0), Reading(6_000, 10.0 + energy.MIN_WINDOW_MS / 2000)) is None
    assert watts_between(Reading(5_000, 10.0), Reading(5_000, 11.0)) is None  # a counter that did not move
    assert mean_watts([240_000, 260_000], 0.2) == pytest.approx(250.0)
    assert mean_watts([240_000, 260_000], energy.MIN_WINDOW_MS / 2000) is None


@pytest.mark.parametrize("step_ms", [1.0, 20.0, 100.0])
def test_the_burst_reads_the_power_between_two_steps_of_the_counter(fake, step_ms):
    clock, lib = fake
    lib.step_ms = step_ms
    gpu, ticks = Gpu(clock, run_ms=0.5), []
    began = clock()
    watts = burst(clock, gpu, lambda: ticks.append(clock()))
    assert watts == pytest.approx(300.0, rel=0.02)
    assert len(ticks) <= (clock() - began) / energy.BEAT_S  # a watchdog's beat, not a message per run  # off by at most a run (0.5 ms) in a >= 50 ms window
    # it stops at the step after the window (a step to wait for the first, the queue ahead past it)
    assert gpu.runs * gpu.run_ms <= 2 * step_ms + energy.MIN_WINDOW_MS + energy.AHEAD_MS + gpu.run_ms


def test_a_counter_coarser_than_the_burst_gives_none_not_noise(fake):
    clock, lib = fake
    lib.step_ms = 2 * energy.MAX_BURST_MS  # at most one step within the burst: nothing to divide by
    gpu = Gpu(clock, run_ms=0.5)
    assert burst(clock, gpu) is None
    assert gpu.runs * gpu.run_ms <= energy.MAX_BURST_MS + energy.AHEAD_MS + gpu.run_ms  # it gave up at its limit


def test_a_gpu_idle_between_launches_gives_none(fake):
    clock, _ = fake
    assert burst(clock, Gpu(clock, run_ms=0.01, launch_ms=0.03)) is None  # runs shorter than the host's launch
    assert burst(clock, Gpu(clock, run_ms=0.04, launch_ms=0.03)) == pytest.approx(300.0, rel=0.02)


def test_without_the_counter_the_power_reading_is_averaged(fake):
    clock, lib = fake
    lib.counter, lib.watts = False, 250.0
    meter = Meter.open("GPU-fake")
    assert meter is not None and not meter.counter
    assert burst(clock, Gpu(clock)) == pytest.approx(250.0)


@pytest.mark.parametrize("missing", ["library", "device", "readings", "switched off"])
def test_no_meter_where_nvml_is_missing_or_refuses_and_nothing_is_said(fake, monkeypatch, capsys, missing):
    clock, lib = fake
    if missing == "library":
        monkeypatch.setattr(nvml, "_NVML", {"lib": None})
    elif missing == "device":
        monkeypatch.setattr(lib, "nvmlDeviceGetHandleByUUID", lambda name, ref: 13, raising=False)
    elif missing == "readings":  # a MIG instance: neither the counter nor the power
        lib.counter = lib.power = False
    else:
        monkeypatch.setenv(energy.SWITCH, "0")
    assert Meter.open("GPU-fake") is None
    gpu = Gpu(clock)
    timing = time_ms(gpu.run, gpu, meter=None)
    assert timing.watts is None and "watts" not in Outcome(OK, timing=timing).row()
    assert capsys.readouterr() == ("", "")


def test_time_ms_with_a_meter_adds_the_bursts_watts(fake, monkeypatch):
    clock, _ = fake
    monkeypatch.setattr(energy, "time", SimpleNamespace(perf_counter=clock))  # the burst's clock, the fake one
    gpu = Gpu(clock, run_ms=2.0)
    timing = time_ms(gpu.run, gpu, meter=Meter.open("GPU-fake"))
    assert timing.median_ms == pytest.approx(2.0, abs=0.01) and timing.watts == pytest.approx(300.0, rel=0.02)
    assert Outcome(OK, timing=timing).row()["watts"] == timing.watts


class PoweredFake(FakeBackend):
    """The fake backend with its power read: 200 W for every kernel, 250 W for cuBLAS; or none."""

    def __init__(self, watts: float | None):
        super().__init__()
        self.watts = watts
        self.baseline = Timing(0.5, 0.49, 0.52, 20, watts and 250.0)

    def measure(self, config, source):
        ms = fake_ms(config)
        return Outcome(OK, err=1e-7, timing=Timing(ms, ms, ms, 5, self.watts))


def test_a_row_gets_watts_and_gflops_per_watt_where_read_and_null_where_not(tmp_path):
    from autotune import store

    for watts in (200.0, None):
        db = store.open_db(tmp_path / f"{watts}.sqlite")
        run_search(db, PoweredFake(watts), [TILED], Limits(), sampler="random", trials=3, seed=1)
        rows = list(db.query("SELECT * FROM results WHERE status = 'ok'"))
        assert len(rows) == 3
        for row in rows:
            if watts is None:
                assert row["watts"] is row["gflops_per_watt"] is row["cublas_watts"] is None
                assert row["cublas_gflops_per_watt"] is None
            else:
                assert row["watts"] == 200.0 and row["cublas_watts"] == 250.0
                assert row["gflops_per_watt"] == pytest.approx(row["tflops"] * 1000 / 200.0)
                cublas_tflops = row["tflops"] * row["time_ms"] / row["cublas_ms"]
                assert row["cublas_gflops_per_watt"] == pytest.approx(cublas_tflops * 1000 / 250.0)
        types = {c.name: c.type for c in db["results"].columns}
        assert {types[c] for c in ("watts", "gflops_per_watt", "cublas_watts", "cublas_gflops_per_watt")} == {"REAL"}


def test_a_replay_answers_with_the_recorded_watts(tmp_path):
    from autotune import store
    from autotune.backends.replay import ReplayBackend
    from autotune.families import config_of_row

    db = store.open_db(tmp_path / "r.sqlite")
    run_search(db, PoweredFake(200.0), [TILED], Limits(), sampler="random", trials=2, seed=1)
    for watts in (240.0, 260.0, None):  # a baseline from before the power was read has none
        store.insert_baseline(db, {"backend": "fake", "gpu_name": "Fake GPU", "M": 256, "N": 256, "K": 256,
                                   "time_ms": 0.5, "time_ms_min": 0.5, "time_ms_max": 0.5,
                                   **({"watts": watts} if watts else {})})
    row = next(db.query("SELECT * FROM results WHERE status = 'ok'"))
    replay = ReplayBackend(tmp_path / "r.sqlite", (256, 256, 256))
    assert replay.baseline is not None and replay.baseline.watts == 250.0
    outcome = replay.measure(config_of_row(row), "")
    assert outcome.timing is not None and outcome.timing.watts == 200.0
