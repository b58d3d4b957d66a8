"""SM clock, board power and temperature while a product runs back to back for a few seconds: the
kernel autotune.load() picks from a database against torch.matmul (TF32 off), in alternating phases.

    python3 benchmarks/profiling/clock_probe.py --db suite.sqlite --shapes 4096x4096x4096,2048x2048x2048

Why: at the compute-bound shapes our kernels' times moved by up to 5% from one H200 to another where
cuBLAS's moved by under 1% (the suite databases, same process): if the board holds its clock below
the maximum under a power cap, the FLOPs a kernel gets per joule decide its speed as much as its
instruction schedule. NVML (libnvidia-ml, through ctypes: no extra package) is read by a thread
every --every ms; each phase reports the median SM clock, mean power, the highest temperature and
the clock-event reasons seen (NVML's bits: power cap, thermal, ...), beside the kernel's ms per call.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import statistics
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

import autotune

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from cuda_events import time_ms  # noqa: E402

REASONS = {0x1: "idle", 0x2: "app_clocks", 0x4: "sw_power_cap", 0x8: "hw_slowdown", 0x20: "sync_boost",
           0x40: "sw_thermal", 0x80: "hw_thermal", 0x100: "hw_power_brake"}


class Nvml:
    """The few NVML calls the probe needs, on device index 0 (the one GPU of the device machine)."""

    def __init__(self) -> None:
        self.lib = ctypes.CDLL("libnvidia-ml.so.1")
        self._check(self.lib.nvmlInit_v2())
        self.handle = ctypes.c_void_p()
        self._check(self.lib.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(self.handle)))
        reasons = getattr(self.lib, "nvmlDeviceGetCurrentClocksEventReasons", None)
        self._reasons = reasons or self.lib.nvmlDeviceGetCurrentClocksThrottleReasons

    @staticmethod
    def _check(rc: int) -> None:
        if rc != 0:
            raise RuntimeError(f"NVML call failed with code {rc}")

    def sample(self) -> tuple[int, float, int, int]:
        """(SM clock MHz, power W, temperature C, clock-event reason bits)."""
        clock, power, temp, bits = ctypes.c_uint(), ctypes.c_uint(), ctypes.c_uint(), ctypes.c_ulonglong()
        self._check(self.lib.nvmlDeviceGetClockInfo(self.handle, 1, ctypes.byref(clock)))  # NVML_CLOCK_SM
        self._check(self.lib.nvmlDeviceGetPowerUsage(self.handle, ctypes.byref(power)))  # milliwatts
        self._check(self.lib.nvmlDeviceGetTemperature(self.handle, 0, ctypes.byref(temp)))  # NVML_TEMPERATURE_GPU
        self._check(self._reasons(self.handle, ctypes.byref(bits)))
        return clock.value, power.value / 1000, temp.value, bits.value


@dataclass
class Sampler:
    nvml: Nvml
    every_s: float
    samples: list[tuple[float, int, float, int, int]] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        while not self.stop.is_set():
            self.samples.append((time.monotonic(), *self.nvml.sample()))
            time.sleep(self.every_s)

    def between(self, t0: float, t1: float) -> list[tuple[float, int, float, int, int]]:
        return [s for s in self.samples if t0 <= s[0] <= t1]


@dataclass
class Phase:
    shape: str
    who: str
    kernel: str
    ms: float
    calls: int
    clock_mhz: float
    power_w: float
    temp_c: int
    reasons: list[str]
    tflops: float
    gflop_per_joule: float


def run_phase(torch: Any, run: Callable[[], object], seconds: float) -> tuple[float, int, float, float]:
    """Calls `run` back to back for about `seconds`; (ms per call by CUDA events, calls, t0, t1)."""
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t0 = time.monotonic()
    start.record()
    calls = 0
    while time.monotonic() - t0 < seconds:
        for _ in range(10):
            run()
        calls += 10
        if calls % 200 == 0:
            torch.cuda.synchronize()  # keeps the host at most a few hundred launches ahead
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / calls, calls, t0, time.monotonic()


def summarize(sampler: Sampler, shape: str, who: str, kernel: str, ms: float, calls: int, t0: float, t1: float,
              flops: float) -> Phase:
    inside = sampler.between(t0 + 0.3 * (t1 - t0), t1)  # the settled part of the phase
    bits = 0
    for s in inside:
        bits |= s[4]
    power = statistics.fmean(s[2] for s in inside)
    return Phase(shape, who, kernel, round(ms, 5), calls, statistics.median(s[1] for s in inside), round(power, 1),
                 max(s[3] for s in inside), [n for b, n in REASONS.items() if bits & b], round(flops / ms / 1e9, 2),
                 round(flops / ms / 1e6 / power, 1))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True, help="the results database autotune.load() picks from")
    parser.add_argument("--shapes", default="4096x4096x4096,2048x2048x2048,8192x8192x8192")
    parser.add_argument("--seconds", type=float, default=3.0, help="length of each phase")
    parser.add_argument("--rounds", type=int, default=2, help="cuBLAS, ours pairs per shape")
    parser.add_argument("--every", type=float, default=20.0, help="NVML sampling period, ms")
    parser.add_argument("--out", help="write the phases as JSON here")
    args = parser.parse_args()
    try:
        nvml = Nvml()
    except (OSError, RuntimeError) as exc:  # no driver library, or NVML refused: one line, not a traceback
        print(f"clock_probe: cannot read the GPU's clocks through NVML: {exc}", file=sys.stderr)
        return 2
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    sampler = Sampler(nvml, args.every / 1000)
    thread = threading.Thread(target=sampler.run, daemon=True)
    thread.start()
    mm = autotune.load(db=args.db)
    phases = []
    for text in args.shapes.split(","):
        M, N, K = (int(v) for v in text.split("x"))
        A, B = torch.randn(M, K, device="cuda"), torch.randn(K, N, device="cuda")
        C, ref = torch.empty(M, N, device="cuda"), torch.empty(M, N, device="cuda")
        kernel = mm.choose(M, N, K).kernel
        runs = {"cublas": lambda: torch.matmul(A, B, out=ref), "ours": lambda: mm(A, B, out=C)}
        for run in runs.values():
            time_ms(torch, run)  # load, compile and warm up before the phases
        for _ in range(args.rounds):
            for who, run in runs.items():
                ms, calls, t0, t1 = run_phase(torch, run, args.seconds)
                phase = summarize(sampler, text, who, kernel if who == "ours" else "torch.matmul", ms, calls, t0, t1,
                                  2.0 * M * N * K)
                phases.append(phase)
                print(f"{text} {who:6} {ms:.4f} ms {phase.tflops:6.2f} TFLOP/s  clock {phase.clock_mhz:.0f} MHz  "
                      f"{phase.power_w:.0f} W  {phase.temp_c} C  {phase.gflop_per_joule} GFLOP/J  "
                      f"{','.join(phase.reasons) or '-'}", flush=True)
                time.sleep(1.0)
    sampler.stop.set()
    if args.out:
        Path(args.out).write_text(json.dumps([asdict(p) for p in phases], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
