"""Kill `autotune search --backend sim` with SIGKILL at random moments, run it again each time,
then check the database: no duplicate measurement, integrity ok, every trial points at a row.

    python benchmarks/stress/kill_loop.py --kills 10 --trials 40 [--workers 2] [--db /tmp/kill.sqlite]

Prints one line per kill and a JSON summary (what docs/RELIABILITY.md records).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def command(db: Path, trials: int, workers: int) -> list[str]:
    return [sys.executable, "-m", "autotune.cli", "search", "--backend", "sim", "--M", "24", "--N", "20", "--K", "9",
            "--family", "naive,tiled", "--sampler", "tpe", "--trials", str(trials), "--workers", str(workers),
            "--db", str(db)]


def measured(db: Path) -> int:
    try:
        with sqlite3.connect(db, timeout=60) as conn:
            return conn.execute("select count(*) from results where status != 'invalid'").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def check(db: Path) -> dict:
    conn = sqlite3.connect(db)
    dup = conn.execute("select count(*) from (select 1 from results group by backend, gpu_name, M, N, K, kernel, "
                       "source_hash having count(*) > 1)").fetchone()[0]
    orphans = conn.execute("select count(*) from trials where result_id not in (select id from results)").fetchone()[0]
    return {"integrity": conn.execute("pragma integrity_check").fetchone()[0], "duplicate_keys": dup,
            "orphan_trials": orphans, "rows": conn.execute("select count(*) from results").fetchone()[0],
            "measured_rows": measured(db), "trials": conn.execute("select count(*) from trials").fetchone()[0]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kills", type=int, default=10)
    ap.add_argument("--trials", type=int, default=40)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--db", type=Path, default=Path(tempfile.mkdtemp()) / "kill.sqlite")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    start = time.monotonic()
    for kill in range(args.kills):
        before = measured(args.db)
        proc = subprocess.Popen(command(args.db, args.trials, args.workers), env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while measured(args.db) < before + 1 and proc.poll() is None:
            time.sleep(0.05)
        time.sleep(rng.uniform(0.0, 1.5))  # somewhere inside a later trial, or between two
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        print(f"kill {kill + 1}: {measured(args.db)} measured rows", flush=True)
    final = subprocess.run(command(args.db, args.trials, args.workers), env=env, capture_output=True, text=True)
    report = {"kills": args.kills, "workers": args.workers, "final_exit": final.returncode,
              "seconds": round(time.monotonic() - start, 1), **check(args.db), "db": str(args.db)}
    print(json.dumps(report, indent=1))
    ok = report["integrity"] == "ok" and not report["duplicate_keys"] and not report["orphan_trials"]
    sys.exit(0 if ok and final.returncode == 0 else 1)


if __name__ == "__main__":
    main()
