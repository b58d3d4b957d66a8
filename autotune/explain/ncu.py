"""Nsight Compute (ncu) as a measuring tool: where it is, the command that profiles one launch
of one kernel, its failures as one line each, and its CSV (`--csv --page raw`) as a typed record.

The raw page has one row per profiled launch and one column per metric, after a header row and
a row of units; ncu's own `==PROF==` lines and the program's output are interleaved around it,
and numbers may carry thousands separators ("1,073,741,824").
"""
from __future__ import annotations

import csv
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from typing import Any

from autotune.errors import AutotuneError, EnvironmentFault

# The counters the profile reads (sm_70 and later; the names ncu 2025.x lists for sm_90).
METRICS = {
    "time": "gpu__time_duration.sum",
    "ld_sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "ld_requests": "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "shared_wavefronts": "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
    "ffma": "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",  # per thread: one per multiply-add
    "dram_pct": "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "dram_read": "dram__bytes_read.sum",
    "dram_write": "dram__bytes_write.sum",
}
# Warp stall reasons, as ncu's Warp State section reports them: cycles a warp spent stalled for
# that reason per instruction issued. mio_throttle and short_scoreboard are shared memory's,
# long_scoreboard global memory's.
STALLS = ("mio_throttle", "short_scoreboard", "long_scoreboard", "barrier", "math_pipe_throttle", "wait",
          "not_selected", "lg_throttle", "no_instruction", "dispatch_stall", "branch_resolving")
# Output that means the profiler may not read the GPU's counters (or could not start at all).
NOT_PERMITTED = ("ERR_NVGPUCTRPERM", "LibraryNotLoaded", "Failed to initialize the profiler")
TIMEOUT_S = 600.0
_TO_MS = {"nsecond": 1e-6, "usecond": 1e-3, "msecond": 1.0, "second": 1e3, "ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}
_PREFIX = {"K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}


def stall_metric(reason: str) -> str:
    return f"smsp__average_warps_issue_stalled_{reason}_per_issue_active.ratio"


def all_metrics() -> list[str]:
    return [*METRICS.values(), *(stall_metric(r) for r in STALLS)]


@dataclass(frozen=True)
class NcuProfile:
    """One profiled launch. None where ncu printed no number (n/a)."""

    kernel: str
    time_ms: float | None
    ffma: float | None  # thread-level FFMA instructions
    ld_sectors: float | None  # global-load sectors (32 B) through L1
    ld_requests: float | None  # global-load requests (one per warp-wide load instruction)
    shared_wavefronts: float | None  # passes through the shared-memory banks, loads and stores
    dram_pct: float | None  # DRAM throughput, % of peak over the kernel's time
    dram_bytes: float | None  # read + written
    stalls: dict[str, float] = field(default_factory=dict)  # reason -> stall cycles per issued instruction

    @property
    def sectors_per_request(self) -> float | None:
        if not self.ld_requests or self.ld_sectors is None:
            return None
        return self.ld_sectors / self.ld_requests

    def top_stalls(self, n: int = 3) -> list[tuple[str, float]]:
        return sorted(self.stalls.items(), key=lambda kv: -kv[1])[:n]

    def columns(self) -> dict[str, Any]:
        """Flat columns for the profiles table: the metrics, the derived ratio, one column per stall."""
        return {"time_ms": self.time_ms, "ffma": self.ffma, "ld_sectors": self.ld_sectors,
                "ld_requests": self.ld_requests, "sectors_per_request": self.sectors_per_request,
                "shared_wavefronts": self.shared_wavefronts, "dram_pct": self.dram_pct,
                "dram_bytes": self.dram_bytes, **{f"stall_{r}": v for r, v in self.stalls.items()}}


# --------------------------------------------------------------------------- the tool

def find_ncu() -> str:
    """$AUTOTUNE_NCU, else ncu on PATH; a one-line error saying how to get it."""
    named = os.environ.get("AUTOTUNE_NCU")
    if named:
        if not (os.path.isfile(named) and os.access(named, os.X_OK)):
            raise EnvironmentFault(f"AUTOTUNE_NCU={named} is not an executable file; point it at Nsight Compute's "
                                   f"ncu, or unset it to use the ncu on PATH")
        return named
    found = shutil.which("ncu")
    if not found:
        raise EnvironmentFault("Nsight Compute (ncu) is not on PATH: install NVIDIA Nsight Compute (it comes with the "
                               "CUDA Toolkit) and put its folder on PATH, or set AUTOTUNE_NCU to the ncu executable")
    return found


def command(ncu: str, kernel: str, skip: int, program: list[str]) -> list[str]:
    """Profile launch number `skip` (0-based) of `kernel` only. --clock-control none: the GPU runs
    at the clocks it runs at under the search, not locked to base; base units: no rescaling."""
    return [ncu, "--clock-control", "none", "--csv", "--page", "raw", "--print-units", "base",
            "--metrics", ",".join(all_metrics()), "--kernel-name", kernel, "--launch-skip", str(skip),
            "--launch-count", "1", *program]


def run(cmd: list[str], cwd: str, timeout: float = TIMEOUT_S) -> str:
    """ncu's standard output (the CSV), or one line saying why there is none."""
    try:
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise AutotuneError(f"Nsight Compute ran past {timeout:.0f} s; profile a smaller shape") from None
    except OSError as exc:
        raise EnvironmentFault(f"cannot run {cmd[0]}: {exc.strerror or exc}; check AUTOTUNE_NCU or PATH") from None
    check(proc.stdout + "\n" + proc.stderr, proc.returncode)
    return proc.stdout


def check(output: str, returncode: int) -> None:
    """Refuse output that holds no profile: the counters not permitted, the program failed, no launch matched."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    if any(marker in output for marker in NOT_PERMITTED):
        said = next((line for line in lines if any(m in line for m in NOT_PERMITTED)), "")
        raise EnvironmentFault(f"Nsight Compute may not profile on this machine ({said[:200]}): reading the GPU's "
                               f"performance counters needs root or CAP_SYS_ADMIN unless the driver allows all users "
                               f"(NVreg_RestrictProfilingToAdminUsers=0); in a container, start it with "
                               f"--cap-add=SYS_ADMIN")
    if returncode == 0 and any(line.startswith('"ID",') for line in lines):
        return
    reason = next((line for line in lines if line.startswith("error:")), None) or next(
        (line for line in reversed(lines) if line.startswith("==ERROR==") or line.startswith("==WARNING==")),
        lines[-1] if lines else "no output")
    raise AutotuneError(f"Nsight Compute profiled nothing (exit status {returncode}): {reason[:300]}")


# --------------------------------------------------------------------------- the CSV

def parse_raw_csv(text: str, kernel: str) -> NcuProfile:
    """The last profiled launch of `kernel` in ncu's `--csv --page raw` output."""
    lines = [line for line in text.splitlines() if line.startswith('"')]
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID",')), None)
    if start is None:
        raise AutotuneError("Nsight Compute printed no CSV table (was --csv --page raw given?)")
    header, *rows = list(csv.reader(lines[start:]))
    units = next((r for r in rows if r and r[0] == ""), [""] * len(header))
    name_at = header.index("Kernel Name") if "Kernel Name" in header else None
    launches = [r for r in rows if r and r[0].isdigit() and len(r) == len(header) and name_at is not None
                and (r[name_at] == kernel or r[name_at].startswith(kernel + "("))]
    if not launches:
        raise AutotuneError(f"Nsight Compute's table has no launch of {kernel}")
    row = dict(zip(header, launches[-1]))
    unit = dict(zip(header, units))

    def value(metric: str, required: bool = True) -> float | None:
        if metric not in row:
            if required:
                raise AutotuneError(f"Nsight Compute's table has no {metric}: this ncu or GPU does not know it")
            return None
        return number(row[metric], unit.get(metric, ""))

    read, write = value(METRICS["dram_read"]), value(METRICS["dram_write"])
    stalls = {r: value(stall_metric(r), required=False) for r in STALLS}
    return NcuProfile(
        kernel=kernel, time_ms=value(METRICS["time"]), ffma=value(METRICS["ffma"]),
        ld_sectors=value(METRICS["ld_sectors"]), ld_requests=value(METRICS["ld_requests"]),
        shared_wavefronts=value(METRICS["shared_wavefronts"]), dram_pct=value(METRICS["dram_pct"]),
        dram_bytes=None if read is None or write is None else read + write,
        stalls={r: v for r, v in stalls.items() if v is not None})


def number(text: str, unit: str) -> float | None:
    """A cell as a number in base units (times in ms); None for n/a or empty."""
    text = text.replace(",", "").strip()
    try:
        x = float(text)
    except ValueError:
        return None
    if unit in _TO_MS:
        return x * _TO_MS[unit]
    if len(unit) > 1 and unit[0] in _PREFIX and unit[1:].islower():  # Kbyte, Msector, ...
        return x * _PREFIX[unit[0]]
    return x
