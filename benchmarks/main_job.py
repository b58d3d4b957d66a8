"""The main job as the README states it: `autotune search --M 4096` on a fresh database, run as a user runs it (the
command, in its own process, wall-clocked), then what `autotune best` reads from that database. Writes
benchmarks/data/main-job-<gpu>.json: {device, commit, command, seconds, rows: {status: count}, best: {kernel,
time_ms, tflops, cublas_ms, pct_cublas}}.

    python benchmarks/main_job.py --commit abc1234 [-o out.json]
    python benchmarks/main_job.py --backend sim --M 64 -o /tmp/job.json    # the same steps on the CPU emulator
"""
from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import autotune
from autotune import store
from autotune.space.devices import gpu_tag

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sources import commit  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commit", help="the sources' commit, recorded in the output (default: benchmarks/sources.py's)")
    parser.add_argument("-o", "--out", help="output JSON (default benchmarks/data/main-job-<gpu>.json)")
    parser.add_argument("--M", type=int, default=4096, help="the shape's side (default the README's 4096)")
    parser.add_argument("--backend", default="cuda", help="cuda (the GPU) or sim (the CPU emulator, small M only)")
    args = parser.parse_args()
    command = ["autotune", "search", "--M", str(args.M), *(["--backend", args.backend] if args.backend != "cuda" else [])]
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "autotune.sqlite"
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "autotune.cli", *command[1:], "--db", str(db)],
                              capture_output=True, text=True)
        seconds = time.perf_counter() - started
        if done.returncode != 0:
            print(done.stdout + done.stderr, file=sys.stderr)
            return done.returncode
        rows = list(store.open_readonly(db).query("SELECT status FROM results WHERE backend = ?", [args.backend]))
        best = autotune.best(args.M, db=str(db), backend=args.backend)
    device = best["gpu_name"] or args.backend
    statuses = Counter(r["status"] for r in rows)  # every row the search wrote, failures included
    out = {"device": device, "commit": args.commit or commit(), "command": shlex.join(command), "seconds": round(seconds, 1),
           "rows": dict(sorted(statuses.items())),
           "best": {k: best[k] for k in ("kernel", "time_ms", "tflops", "cublas_ms", "pct_cublas")}}
    path = Path(args.out or Path(__file__).resolve().parent / "data" / f"main-job-{gpu_tag(device)}.json")
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
