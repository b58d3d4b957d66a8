"""Does the search loop itself scale with GPU workers? N fake GPUs, each sleeping SECONDS per
measurement (the GIL is free meanwhile, as while a real worker process runs a kernel), searched
with the default sampler; prints new measurements per second and where the search's threads
spent their time (ask, suggest, evaluate of new and of other trials, tell). With `ahead` the fakes
also compile every kernel through the compile-ahead pool, as GPU workers do.

    python benchmarks/profiling/loop_scaling.py WORKERS TRIALS SECONDS [FAMILIES] [ahead]
    SHAPE=1,8192,8192 python benchmarks/profiling/loop_scaling.py 2 60 0.2 blocked,splitk
"""
from __future__ import annotations

import collections
import os
import sys
import tempfile
import threading
import time
import zlib
from pathlib import Path

import optuna

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from autotune import store  # noqa: E402
from autotune.backends.outcome import OK, Outcome, Timing  # noqa: E402
from autotune.families import FAMILIES  # noqa: E402
from autotune.search import loop  # noqa: E402
from autotune.space import Limits  # noqa: E402
from tests.fakes import CompilingFake  # noqa: E402

SPENT: dict[str, float] = collections.defaultdict(float)
CALLS: collections.Counter = collections.Counter()
LOCK = threading.Lock()


def _add(name: str, seconds: float) -> None:
    with LOCK:
        SPENT[name] += seconds
        CALLS[name] += 1


def timed(name: str, fn):
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            _add(name, time.perf_counter() - start)
    return wrapper


def timed_evaluate(real):
    def evaluate(*args, **kwargs):
        start = time.perf_counter()
        done = real(*args, **kwargs)
        new = done is not None and not done.cached and done.row["status"] != "invalid"
        _add("eval-new" if new else "eval-other", time.perf_counter() - start)
        return done
    return evaluate


class SleepingGPU(CompilingFake):
    """A measurement is SECONDS of sleep; the time is a fixed function of the kernel's name."""

    compile_ahead = "ahead" in sys.argv

    def measure(self, config, source):
        time.sleep(self.seconds)
        self.measured.append(config.name)
        ms = 1.0 + (zlib.crc32(config.name.encode()) % 1000) / 100.0
        return Outcome(OK, err=1e-7, timing=Timing(ms, ms * 0.99, ms * 1.02, 5))


def main() -> None:
    workers, trials, seconds = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    names = sys.argv[4] if len(sys.argv) > 4 and sys.argv[4] != "ahead" else "naive,tiled,blocked"
    shape = tuple(int(x) for x in os.environ.get("SHAPE", "4096,4096,4096").split(","))
    optuna.Study.ask = timed("ask", optuna.Study.ask)
    optuna.Study.tell = timed("tell", optuna.Study.tell)
    loop.evaluate = timed_evaluate(loop.evaluate)
    loop.suggest = timed("suggest", loop.suggest)
    db = store.open_db(Path(tempfile.mkdtemp()) / "scaling.sqlite")
    backends = [SleepingGPU(*shape, seconds=seconds) for _ in range(workers)]
    start = time.monotonic()
    result = loop.run_search(db, backends, [FAMILIES[f] for f in names.split(",")], Limits(), trials=trials, seed=0)
    wall = time.monotonic() - start
    print(f"{workers} worker(s): {result.trials} trials, {result.new} new, {result.skipped} skipped in {wall:.1f} s"
          f" = {result.new / wall:.2f} new/s")
    for name in SPENT:
        print(f"  {name:<10} {CALLS[name]:5d} calls {SPENT[name]:7.2f} s {1000 * SPENT[name] / CALLS[name]:7.1f} ms/call")


if __name__ == "__main__":
    main()
