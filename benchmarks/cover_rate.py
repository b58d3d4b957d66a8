"""How much `autotune cover` measures within its budget: the products of a shapes file covered in one budget,
then per product the verified and failed rows, the cuBLAS baselines and the seconds, read from the database
it wrote. With --old PATH, a copy of an earlier tree's `autotune` package (its parent folder) covers the same
products first, in the same process's GPU lease, each run with a cold kernel cache of its own: the two side by
side. Writes benchmarks/data/cover-rate-<gpu>.json.

    python benchmarks/cover_rate.py --shapes benchmarks/host-bound-shapes.toml --budget 110 --trials 12 \
        [--old old-tree --old-commit 752bcb9] --commit abc1234 -o cover-rate.json
"""
from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def cover(code: Path, args: argparse.Namespace, work: Path, label: str) -> dict:
    """One cover in a process of its own, importing the package from the folder `code` (run from the scratch
    folder: `python -m` puts the working folder first on the path)."""
    db, cache = work / f"{label}.sqlite", work / f"cache-{label}"
    env = dict(os.environ, AUTOTUNE_CACHE=str(cache))
    env["PYTHONPATH"] = os.pathsep.join([str(code.resolve()), env.get("PYTHONPATH", "")])
    command = [sys.executable, "-m", "autotune.cli", "cover", "--shapes", str(Path(args.shapes).resolve()), "--budget", str(args.budget),
               "--trials", str(args.trials), "--backend", args.backend, "--db", str(db)]
    started = time.monotonic()
    done = subprocess.run(command, env=env, capture_output=True, text=True, cwd=work)
    seconds = time.monotonic() - started
    if done.returncode != 0:
        sys.exit(f"cover_rate.py: {label}: cover exited {done.returncode}: {done.stderr.strip()[-400:]}")
    return {"code": label, "seconds": round(seconds, 1), **counts(db), "summary": done.stdout.strip().splitlines()[-1]}


def counts(db: Path) -> dict:
    conn = sqlite3.connect(db)
    try:
        per = conn.execute("""SELECT M, N, K, SUM(status = 'ok'), COUNT(*) FROM results GROUP BY M, N, K""").fetchall()
        baselines = conn.execute("SELECT COUNT(DISTINCT M || 'x' || N || 'x' || K) FROM baselines").fetchone()[0]
        gpu = conn.execute("SELECT gpu_name FROM results LIMIT 1").fetchone()
    finally:
        conn.close()
    return {"gpu_name": gpu[0] if gpu else None, "products_with_baseline": baselines, "products_with_kernel": sum(ok > 0 for *_, ok, _ in per),
            "verified_rows": sum(ok for *_, ok, _ in per), "rows": sum(n for *_, n in per),
            "per_product": [{"M": M, "N": N, "K": K, "verified": ok, "rows": n} for M, N, K, ok, n in per]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", default="benchmarks/host-bound-shapes.toml")
    parser.add_argument("--budget", type=float, default=110)
    parser.add_argument("--trials", type=int, default=12)
    parser.add_argument("--backend", default="cuda", help="cuda, or sim: the emulator, for a check without a GPU")
    parser.add_argument("--old", help="a folder holding an earlier tree's autotune package, covered first")
    parser.add_argument("--old-commit", default="", help="that tree's commit, recorded")
    parser.add_argument("--commit", default="", help="the sources' commit, recorded")
    parser.add_argument("-o", "--out", required=True)
    args = parser.parse_args()
    runs = []
    with tempfile.TemporaryDirectory() as work:
        if args.old:
            runs.append(cover(Path(args.old), args, Path(work), args.old_commit or "old"))
            runs[0].pop("gpu_name")
        runs.append(cover(Path(__file__).resolve().parents[1], args, Path(work), args.commit or "new"))
    out = {"device": runs[-1].pop("gpu_name"), "shapes": args.shapes, "budget_s": args.budget, "trials": args.trials,
           "runs": runs}
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    for r in runs:
        print(f"{r['code']}: {r['seconds']} s, baselines at {r['products_with_baseline']} products, a verified kernel "
              f"at {r['products_with_kernel']}, {r['verified_rows']} verified of {r['rows']} rows; {r['summary']}")


if __name__ == "__main__":
    main()
