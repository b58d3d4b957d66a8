"""Sampler benchmark on replayed datasets: trials and simulated seconds to within 5% and 2% of
the best, per sampler over many seeds, as markdown (for docs/search.md).

    python benchmarks/bench_search.py                       # every dataset below, 20 seeds
    python benchmarks/bench_search.py --only synthetic --seeds 5 --samplers random,tpe,model
    python benchmarks/bench_search.py --replay-db new.sqlite --family naive,tiled --M 2048
    python benchmarks/bench_search.py --make-synthetic synthetic.sqlite    # benchmarks/data keeps it gzip'd (-9 -n)

The README's sampler table comes from (both files committed; tests/test_docs_figures.py checks
that the README quotes the JSON):

    python benchmarks/bench_search.py --only h200-gt-4096,h200-gt-2048 --seeds 20 \
        --samplers random,grid,tpe,tpe-mv,qmc,model --jobs 2 \
        -o benchmarks/data/bench-search-naive-tiled-h200.md --json benchmarks/data/bench-search-naive-tiled-h200.json

No GPU is used: the trials are answered by autotune.replay.ReplayBackend (see autotune/bench.py).
"""
from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import platform
import shlex
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run from a checkout: tests.fakes builds the synthetic dataset

from autotune import store  # noqa: E402
from autotune.families import FAMILIES, NAIVE, TILED  # noqa: E402
from autotune.search import bench  # noqa: E402
from autotune.search.loop import run_search  # noqa: E402
from autotune.space import Limits  # noqa: E402

DATA = ROOT / "benchmarks" / "data"
CEILINGS = DATA / "model-ceilings-sm90-h200.json"
SYNTHETIC_LABEL = ("SYNTHETIC: times from tests/fakes.py's FakeBackend (bigger tiles faster, padding slower, "
                   "a hash jitter), not a GPU; it checks the machinery, not the samplers' worth on real kernels")
# name -> (file, families, label or "" to read it from the data, M = N = K)
DATASETS = {
    "h200-gt-4096": ("h200-gt-naive-tiled-4096.sqlite.gz", "naive,tiled", "", 4096),
    "h200-gt-2048": ("h200-gt-naive-tiled-2048.sqlite.gz", "naive,tiled", "", 2048),
    "h200-blocked-sample": ("h200-gt-blocked-4096.sqlite.gz", "blocked", "", 4096),
    "synthetic": ("synthetic-fake-naive-tiled-4096.sqlite.gz", "naive,tiled", SYNTHETIC_LABEL, 4096),
}


def make_synthetic(path: Path, size: int = 4096) -> None:
    """Every valid naive and tiled config through the fake backend: an exhaustive dataset."""
    from tests.fakes import FakeBackend

    path.unlink(missing_ok=True)
    db = store.open_db(path)
    run_search(db, FakeBackend(size, size, size), [NAIVE, TILED], Limits(), sampler="grid", trials=10**6)
    db["sources"].drop()  # the replay needs the results only; the sources are most of the size
    db.conn.commit()
    db.execute("PRAGMA journal_mode = DELETE")  # one file, no -wal beside it
    db.vacuum()
    db.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--samplers", default=",".join(bench.DEFAULT_SAMPLERS))
    ap.add_argument("--only", help="comma-separated dataset names: " + ", ".join(DATASETS))
    ap.add_argument("--replay-db", help="benchmark this database instead of the known datasets")
    ap.add_argument("--family", default="naive,tiled", help="families, with --replay-db")
    ap.add_argument("--M", type=int, default=4096, help="shape (square), with --replay-db")
    ap.add_argument("--ceilings", default=str(CEILINGS), help="predicted ceilings for the model sampler")
    ap.add_argument("-o", "--output", help="write the markdown here too")
    ap.add_argument("--json", help="write the figures here as JSON (medians, quartiles, min, max, every seed's count)")
    ap.add_argument("--jobs", type=int, default=1, help="runs in parallel (forked processes; the same results)")
    ap.add_argument("--make-synthetic", metavar="PATH", help="write the synthetic dataset and stop")
    args = ap.parse_args()
    if args.make_synthetic:
        make_synthetic(Path(args.make_synthetic))
        return
    if args.replay_db:
        specs = [(Path(args.replay_db).stem, Path(args.replay_db), args.family, "", args.M)]
    else:
        names = args.only.split(",") if args.only else list(DATASETS)
        specs = [(n, DATA / DATASETS[n][0], *DATASETS[n][1:]) for n in names]
    ceilings = bench.load_ceilings(args.ceilings if Path(args.ceilings).exists() else None)
    seeds = list(range(args.seeds))
    command = "python benchmarks/bench_search.py " + shlex.join(sys.argv[1:])
    versions = {p: _version(p) for p in ("optuna", "scipy", "torch")}
    start = time.monotonic()
    parts, summaries = [], []
    for name, path, fams, label, size in specs:
        ds = bench.load_dataset(path, (size,) * 3, [FAMILIES[f] for f in fams.split(",")], name, label)
        runs, skipped = bench.bench(ds, args.samplers.split(","), seeds, ceilings, jobs=args.jobs,
                                    log=lambda s: print(s, file=sys.stderr, flush=True))
        parts.append(bench.table(ds, runs, skipped))
        summaries.append(bench.summary(ds, runs, skipped))
        print(parts[-1], flush=True)
    wall = time.monotonic() - start
    if args.output:
        head = (f"# Sampler benchmark on replayed datasets\n\nMade with `{command}`: seeds {seeds[0]}-{seeds[-1]}, "
                + ", ".join(f"{p} {v}" for p, v in versions.items() if v)
                + f"; {wall:.0f} s on {os.cpu_count()} CPUs, no GPU. Figures as JSON beside it "
                "(`--json`); `vs random` is random's median trials to 2% over this sampler's.\n\n")
        Path(args.output).write_text(head + "\n".join(parts))
    if args.json:
        out = {"command": command, "seeds": seeds, "versions": versions, "python": platform.python_version(),
               "wall_s": round(wall), "cpus": os.cpu_count(), "targets": list(bench.TARGETS), "datasets": summaries}
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None

if __name__ == "__main__":
    main()
