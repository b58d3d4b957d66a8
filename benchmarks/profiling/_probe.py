"""What skinny_probe.py and tall_probe.py share: the Nsight Compute pass over a few variants and the
command line (--out for the timed rows, --ncu for the profiles). Each script passes its own variants."""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from autotune.api.profile import write_runner
from autotune.space import Config

HBM_BYTES_PER_S = 4.8e12
SECTIONS = ("SpeedOfLight", "Occupancy", "LaunchStats", "SchedulerStats", "WarpStateStats", "ComputeWorkloadAnalysis",
            "MemoryWorkloadAnalysis")
# (label, config, its source, shape): one profiled variant
Profiled = tuple[str, Config, str, tuple[int, int, int]]


def profile(path: Path, variants: list[Profiled]) -> None:
    """Nsight Compute's sections for each variant's second launch (the first warms), into one text file."""
    with path.open("w") as log, tempfile.TemporaryDirectory() as tmp:
        for i, (label, config, source, shape) in enumerate(variants):
            folder = Path(tmp) / str(i)
            folder.mkdir()
            runner = write_runner(folder, config, config.name, source, shape, 0)
            cmd = ["ncu", "--clock-control", "none", "--kernel-name", config.name, "--launch-skip", "1",
                   "--launch-count", "1", *(a for s in SECTIONS for a in ("--section", s)), sys.executable, str(runner)]
            log.write(f"\n##### {shape} {label}\n")
            log.flush()
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
            log.write(proc.stdout[-20000:] + proc.stderr[-3000:])
            print(f"profiled {label} at {shape}: exit {proc.returncode}", flush=True)


def main(doc: str, time_all: Callable[[], list[dict]], profiled: Callable[[], list[Profiled]]) -> int:
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--out", required=True, help="JSON file for the timed rows")
    ap.add_argument("--ncu", help="text file for Nsight Compute's sections (profiles a few variants)")
    args = ap.parse_args()
    Path(args.out).write_text(json.dumps(time_all(), indent=1) + "\n")
    if args.ncu:
        profile(Path(args.ncu), profiled())
    return 0
