"""The shape's roofline: the fastest any SGEMM kernel could compute C = A*B at this shape.

Two floors, each a time:

FMA   2*M*N*K FLOP at the device's FP32 FMA peak.
DRAM  every operand read once and C written once, at the device's DRAM bandwidth:
      4*(M*K + K*N + M*N) bytes. (C is not read: the kernels compute C = A*B, beta = 0.)

The roofline is the larger floor; a shape is memory-bound when the DRAM floor is. Unlike the
kernel's own ceilings (explain.model: FMA, shared, global), these need only the shape and the
device spec, so every verified row gets them, whatever the backend.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from autotune.backends.outcome import OK
from autotune.explain.model import DeviceSpec

FLOAT_BYTES = 4
ROOFLINE_COLUMNS = ("ceil_dram", "roofline_ms", "pct_roofline", "memory_bound")


@dataclass(frozen=True)
class Roofline:
    fma_ms: float  # the FMA floor
    dram_ms: float  # the DRAM floor

    @property
    def ms(self) -> float:
        return max(self.fma_ms, self.dram_ms)

    @property
    def memory_bound(self) -> bool:
        return self.dram_ms > self.fma_ms


def dram_bytes(M: int, N: int, K: int) -> int:
    """A and B read once, C written once."""
    return FLOAT_BYTES * (M * K + K * N + M * N)


def roofline(M: int, N: int, K: int, spec: DeviceSpec) -> Roofline:
    fma_ms = 2.0 * M * N * K / (spec.fma_tflops * 1e12) * 1e3
    dram_ms = dram_bytes(M, N, K) / (spec.dram_gbps * 1e9) * 1e3
    return Roofline(fma_ms, dram_ms)


def roofline_ms(M: int, N: int, K: int, spec: DeviceSpec) -> float:
    return roofline(M, N, K, spec).ms


def pct_of_roofline(M: int, N: int, K: int, ms: float, spec: DeviceSpec) -> float:
    """How close a time comes to the shape's roofline, in percent (100 = at the roofline)."""
    return 100.0 * roofline_ms(M, N, K, spec) / ms


def roofline_columns(row: dict[str, Any], spec: DeviceSpec) -> dict[str, Any]:
    """The roofline columns of a verified, timed row (empty for anything else).

    ceil_dram sits beside the kernel's ceil_fma/ceil_shared/ceil_global in TFLOP/s: the rate
    at which the DRAM floor would be met; memory_bound is 1 when that floor is the roofline.
    """
    if row.get("status") != OK or not row.get("time_ms"):
        return {}
    M, N, K = row["M"], row["N"], row["K"]
    r = roofline(M, N, K, spec)
    return {"ceil_dram": 2.0 * M * N * K / (r.dram_ms * 1e-3) / 1e12, "roofline_ms": r.ms,
            "pct_roofline": 100.0 * r.ms / row["time_ms"], "memory_bound": int(r.memory_bound)}
