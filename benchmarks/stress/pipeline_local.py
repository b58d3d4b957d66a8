"""The search's own costs and the compile pool, measured without a GPU:

    python benchmarks/stress/pipeline_local.py overhead [--trials 40] [--profile]   # the loop around a trial
    python benchmarks/stress/pipeline_local.py parallel [--kernels 16] [--jobs 1,2]  # compiles really run in parallel
    python benchmarks/stress/pipeline_local.py search [--trials 16] [--jobs 1,2] [--gpu-s 0.1]  # the whole pipeline

overhead: a search whose backend answers at once (tests/fakes.py, all families, 4096^3), so
its wall time is the search's own: Optuna ask/tell, rendering, SQLite rows, claims.
parallel: blocked-family kernels through the compile pool (NVRTC and nvdisasm, a cold cubin
cache), for each number of processes; and what starting the pool costs.
search: a search whose backend compiles nothing and sleeps --gpu-s per measurement (a GPU
stand-in) while the pool builds and disassembles the next kernels (a cold cache per run).
"""
from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import random
import statistics
import sys
import tempfile
import time
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run from a checkout: tests.fakes is the fake backend

from autotune import store  # noqa: E402
from autotune.backends.outcome import OK, Outcome, Timing  # noqa: E402
from autotune.codegen.render import render  # noqa: E402
from autotune.families import FAMILIES  # noqa: E402
from autotune.space import Limits, random_valid  # noqa: E402
from tests.fakes import FakeBackend  # noqa: E402

SIZE = 4096


class AnyFamily(FakeBackend):
    """The test fake, with made-up times for the blocked family too."""

    def __init__(self) -> None:
        super().__init__(SIZE, SIZE, SIZE)

    def measure(self, config, source):
        if config.family.name != "blocked":
            return super().measure(config, source)
        ms = 5.0 + (zlib.crc32(config.name.encode()) % 100) / 10
        return Outcome(OK, err=1e-7, timing=Timing(ms, ms, ms, 5))


class StandInGpu(AnyFamily):
    """A GPU worker stand-in: compiles ahead, explains, and takes gpu_s per measurement."""

    compile_ahead = True
    explain = True

    def __init__(self, gpu_s: float) -> None:
        super().__init__()
        self.gpu_s = gpu_s

    def measure(self, config, source):
        time.sleep(self.gpu_s)
        return super().measure(config, source)


def fresh_cache() -> None:
    os.environ["AUTOTUNE_CACHE"] = tempfile.mkdtemp(prefix="autotune-cache-")


def overhead(trials: int, profile: bool) -> None:
    from autotune.search.loop import run_search

    db = store.open_db(Path(tempfile.mkdtemp()) / "overhead.sqlite")
    prof = cProfile.Profile() if profile else None
    start = time.perf_counter()
    if prof:
        prof.enable()
    result = run_search(db, AnyFamily(), list(FAMILIES.values()), Limits(), trials=trials, seed=0)
    if prof:
        prof.disable()
    wall = time.perf_counter() - start
    print(f"overhead: {result.new} new of {result.trials} trials in {wall:.2f} s: "
          f"{1e3 * wall / max(result.new, 1):.1f} ms per new trial, {1e3 * wall / result.trials:.1f} ms per trial")
    if prof:
        pstats.Stats(prof).sort_stats("cumulative").print_stats(30)


def parallel(kernels: int, jobs_list: list[int]) -> None:
    from autotune.search.pipeline import Compiler, Job, ready

    rng = random.Random(3)
    configs = [random_valid(FAMILIES["blocked"], rng) for _ in range(kernels)]
    fresh_cache()
    compiler = Compiler(1)
    start = time.perf_counter()
    ready(compiler.submit(Job("empty", 'extern "C" __global__ void empty() {}', "sm_90", False)))
    print(f"parallel: starting a pool process and its first (empty) compile: {time.perf_counter() - start:.2f} s")
    compiler.close()
    for counts in (False, True):
        for jobs in jobs_list:
            fresh_cache()
            compiler = Compiler(jobs)
            start = time.perf_counter()
            work = [compiler.submit(Job(c.name, render(c), "sm_90", counts)) for c in configs]
            done = [ready(w) for w in work]
            wall = time.perf_counter() - start
            compiler.close()
            what = "compile + disassemble" if counts else "compile"
            print(f"parallel: {kernels} blocked kernels, {what}, {jobs} job(s): {wall:.2f} s "
                  f"({sum(d is not None for d in done) if counts else kernels} with results)")


def search(trials: int, jobs_list: list[int], gpu_s: float) -> None:
    from autotune.search.loop import run_search

    for jobs in jobs_list:
        fresh_cache()
        db = store.open_db(Path(tempfile.mkdtemp()) / "search.sqlite")
        start = time.perf_counter()
        result = run_search(db, StandInGpu(gpu_s), [FAMILIES["blocked"]], Limits(), trials=trials, seed=0,
                            compile_jobs=jobs)
        wall = time.perf_counter() - start
        rows = list(db.query("select * from results where status = 'ok' and t_trial_s is not null"))
        waits = [r["t_wait_s"] for r in rows]
        own = (wall - sum(waits) - gpu_s * len(rows)) / max(result.new, 1)  # neither waiting nor "GPU"
        print(f"search: {jobs} job(s), {gpu_s:g} s of GPU per trial: {result.new} new of {result.trials} trials in "
              f"{wall:.2f} s = {wall / max(result.new, 1):.2f} s per new trial; median t_trial_s "
              f"{statistics.median(r['t_trial_s'] for r in rows):.3f}, t_wait_s {statistics.median(waits):.3f}, "
              f"t_explain_s {statistics.median(r['t_explain_s'] for r in rows):.4f}; the loop's own time "
              f"{1e3 * own:.0f} ms per new trial")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=["overhead", "parallel", "search"])
    ap.add_argument("--trials", type=int, default=40)
    ap.add_argument("--profile", action="store_true", help="overhead: print cProfile's top entries")
    ap.add_argument("--kernels", type=int, default=16)
    ap.add_argument("--jobs", default="1,2", help="compile processes to compare, comma-separated")
    ap.add_argument("--gpu-s", type=float, default=0.1, help="search: seconds the stand-in GPU takes per trial")
    args = ap.parse_args()
    jobs = [int(j) for j in args.jobs.split(",")]
    if args.what == "overhead":
        overhead(args.trials, args.profile)
    elif args.what == "parallel":
        parallel(args.kernels, jobs)
    else:
        search(args.trials, jobs, args.gpu_s)


if __name__ == "__main__":
    main()
