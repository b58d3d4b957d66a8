"""Does enqueueing a neighbour for each wasted proposal (search.fresh) cost the sampler its aim?
tpe-mv on the exhaustive naive+tiled dataset (H200, 4096^3), replayed: new measurements until within
5% and 2% of the dataset's best, with and without fresh neighbours, over SEEDS seeds (no GPU).

    python benchmarks/profiling/fresh_quality.py [SEEDS]
"""
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from autotune import store  # noqa: E402
from autotune.backends.replay import ReplayBackend  # noqa: E402
from autotune.families import NAIVE, TILED  # noqa: E402
from autotune.search import bench  # noqa: E402
from autotune.search.loop import run_search  # noqa: E402
from autotune.space import Limits  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "data" / "h200-gt-naive-tiled-4096.sqlite.gz"
ds = bench.load_dataset(DATA, (4096, 4096, 4096), [NAIVE, TILED])
assert ds.exhaustive
stop_ms = ds.best["time_ms"] / (1.0 - min(bench.TARGETS))


def one(seed: int, fresh: bool) -> bench.Run:
    def progress(result, done):
        if result.best and result.best["time_ms"] <= stop_ms:
            raise bench._Reached

    with tempfile.TemporaryDirectory() as tmp:
        db = store.open_db(Path(tmp) / "b.sqlite")
        backend = ReplayBackend(ds.path, ds.shape)
        backend.any_config = True  # exhaustive: every valid config has a row
        try:
            run_search(db, backend, ds.families, Limits(), sampler="tpe-mv", trials=len(ds.space), seed=seed,
                       start_from_defaults=False, fresh=fresh, progress=progress)
        except bench._Reached:
            pass
        rows = list(db.query("SELECT t.cached, r.status, r.time_ms, r.reps FROM trials t "
                             "JOIN results r ON r.id = t.result_id ORDER BY t.id"))
        proposals = len(rows)
        db.close()
    run = bench._tally(bench.Run("tpe-mv", seed), rows, ds.best["time_ms"])
    run.total_new = proposals
    return run


seeds = range(int(sys.argv[1]) if len(sys.argv) > 1 else 10)
for fresh in (False, True):
    runs = [one(s, fresh) for s in seeds]
    for t in bench.TARGETS:
        got = [r.new[t] for r in runs if r.new[t] is not None]
        print(f"fresh={fresh!s:5} within {t:.0%}: new measurements median {statistics.median(got):.0f}, "
              f"mean {statistics.mean(got):.1f} (reached {len(got)}/{len(runs)})")
    print(f"fresh={fresh!s:5} proposals until within {min(bench.TARGETS):.0%}: median "
          f"{statistics.median(r.total_new for r in runs):.0f}")
