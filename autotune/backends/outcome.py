"""What measuring one config on one backend produced: a row of the results table."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from statistics import median

# Statuses. Only "ok" rows can ever be a best result.
OK = "ok"
INVALID = "invalid"  # refused by a constraint before rendering
COMPILE_ERROR = "compile_error"
WRONG = "wrong"  # ran, but the answer is off (or NaN: an output never written)
LAUNCH_ERROR = "launch_error"  # the launch or the kernel failed (fault, bad config, worker died)
TIMEOUT = "timeout"  # no answer within the watchdog's limit (an endless loop?)
UNRECORDED = "unrecorded"  # replay only: the recorded dataset never measured this config
STATUSES = (OK, INVALID, COMPILE_ERROR, WRONG, LAUNCH_ERROR, TIMEOUT, UNRECORDED)
FAILED = (COMPILE_ERROR, WRONG, LAUNCH_ERROR, TIMEOUT)  # a kernel's failures: what `--remeasure failed` redoes


@dataclass(frozen=True)
class Timing:
    median_ms: float
    min_ms: float
    max_ms: float
    reps: int
    watts: float | None = None  # the board's average power running it (backends/cuda/energy.py); None: not read

    @staticmethod
    def of(times_ms: list[float], watts: float | None = None) -> "Timing":
        return Timing(median(times_ms), min(times_ms), max(times_ms), len(times_ms), watts)


@dataclass
class Outcome:
    status: str
    reason: str = ""
    err: float | None = None  # relative Frobenius error against the reference
    err_ref: float | None = None  # fp32-tc: cuBLAS FP32's own error against the same float64 reference
    timing: Timing | None = None
    extra: dict = field(default_factory=dict)  # num_regs, static_shared, clock, ...

    def row(self) -> dict:
        t = asdict(self.timing) if self.timing else {}
        return {
            "status": self.status,
            "reason": self.reason,
            "err": self.err,
            "time_ms": t.get("median_ms"),
            "time_ms_min": t.get("min_ms"),
            "time_ms_max": t.get("max_ms"),
            "reps": t.get("reps"),
            # only where measured: a column first added with a None would take the wrong type
            **({"err_ref": self.err_ref} if self.err_ref is not None else {}),
            **({"watts": t["watts"]} if t.get("watts") is not None else {}),
            **self.extra,
        }


def tflops(M: int, N: int, K: int, ms: float) -> float:
    return 2.0 * M * N * K / (ms * 1e-3) / 1e12


def per_watt(rate_tflops: float, watts: float | None) -> float | None:
    """GFLOP/s per watt (GFLOP per joule) at this rate and average power; None where no power was read."""
    return rate_tflops * 1000.0 / watts if watts else None


class Fault(Exception):
    """A variant broke its backend (a GPU fault poisons the CUDA context). In a worker process
    (autotune/backends/worker.py) the parent records the row and starts a fresh worker; in-process
    callers record the row and stop."""

    def __init__(self, message: str):
        super().__init__(message)
        self.outcome = Outcome(LAUNCH_ERROR, reason=message[:300])
