"""Search efficiency against ground truth: each sampler, over many seeds, replayed on a dataset.

For one dataset (a recorded results database, see autotune/backends/replay.py) the reference is its
fastest ok row: the exhaustive best when the dataset covers the whole valid space, the best
recorded otherwise. Each (sampler, seed) runs the real run_search against a ReplayBackend
over a fresh temporary database, so nothing is answered from an earlier run, and stops once
the best so far is within the tightest target. From the trials table, in order, it counts
the new measurements (refused and reused configs cost nothing, as in a real search) and the
simulated seconds (replay.trial_seconds) until the best so far is within each target.

"Within 2%" means a throughput at least 98% of the reference: time <= reference / 0.98.

A dataset that does not cover the valid space is searched within what it recorded: the
samplers are wrapped in samplers.Restricted, random is a seeded shuffle of the recorded
configs (samplers.RandomOrder), grid walks them in declaration order, and the fractions
are of the recorded set. The report says which.
"""
from __future__ import annotations

import json
import logging
import math
import multiprocessing
import statistics
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from autotune import store
from autotune.backends.replay import REPLAYED, ReplayBackend, trial_seconds
from autotune.search import samplers
from autotune.search.loop import run_search
from autotune.space import Config, Family, Limits, count_valid, valid_configs

TARGETS = (0.05, 0.02)
DEFAULT_SAMPLERS = ("random", "grid", "tpe", "tpe-mv", "qmc", "gp", "cmaes", "model")


@dataclass
class Dataset:
    name: str
    path: str
    shape: tuple[int, int, int]
    families: list[Family]
    valid: list[Config]  # the valid space of the families
    recorded: list[Config]  # valid configs the dataset answers (ok or a failure)
    best: dict  # its fastest ok row
    label: str = ""  # what the data is: GPU, date; "synthetic" for generated data

    @property
    def exhaustive(self) -> bool:
        return len(self.recorded) == len(self.valid)

    @property
    def space(self) -> list[Config]:
        """What a search may propose: the valid space, or what a partial dataset recorded."""
        return self.valid if self.exhaustive else self.recorded

    def within(self, target: float) -> int:
        """How many configs of the space reach the target (random search's odds)."""
        names = {c.name for c in self.space}
        backend_rows = ReplayBackend(self.path, self.shape).rows
        return sum(1 for n in names if _reaches(backend_rows.get(n), self.best["time_ms"], target))


def _reaches(row: dict | None, best_ms: float, target: float) -> bool:
    return bool(row and row["status"] == "ok" and row["time_ms"] <= best_ms / (1.0 - target))


def load_dataset(path: str | Path, shape: tuple[int, int, int], families: list[Family], name: str = "",
                 label: str = "") -> Dataset:
    backend = ReplayBackend(path, shape)
    fams = [f.name for f in families]
    valid = [c for f in families for c in valid_configs(f)]
    rows = backend.rows
    recorded = [c for c in valid if c.name in rows and rows[c.name]["status"] in REPLAYED]
    best = backend.best(fams)
    if best is None:
        raise ValueError(f"{path} has no ok row for {', '.join(fams)}")
    prov = backend.provenance
    label = label or f"{prov['gpu_name']} ({backend.recorded_backend}), {best['created_at'][:10]}"
    M, N, K = shape
    return Dataset(name or Path(path).stem, str(path), (M, N, K), families, valid, recorded, best, label)


@dataclass
class Run:
    """One sampler, one seed: new measurements and simulated seconds until each target."""
    sampler: str
    seed: int
    new: dict[float, int | None] = field(default_factory=dict)  # None: not reached within the budget
    seconds: dict[float, float | None] = field(default_factory=dict)
    total_new: int = 0


class _Reached(Exception):
    """Raised from the progress callback to end a run once the tightest target is met."""


class _QuietReached(logging.Filter):
    """Optuna logs the trial that _Reached ends as failed: expected here, so not shown."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return "_Reached()" not in message and "failed with value None" not in message


for _handler in logging.getLogger("optuna").handlers:  # a filter on the logger misses its children's records
    _handler.addFilter(_QuietReached())


def _factory(name: str, ds: Dataset, ceilings: dict[str, float | None] | None) -> Callable | None:
    """The sampler factory a run binds, or None where run_search's own name does the job."""
    space, fams = ds.space, ds.families
    if name == "model":
        return lambda seed: samplers.ModelSampler(space, fams, ceilings or {}, seed)
    if name == "grid":
        return None if ds.exhaustive else (lambda seed: samplers.CandidateSampler(space, fams, seed))
    if ds.exhaustive:
        return None
    if name == "random":  # uniform over the recorded set: the baseline must be fair
        return lambda seed: samplers.RandomOrder(space, fams, seed)
    from autotune.search.loop import make_sampler

    return lambda seed: samplers.Restricted(make_sampler(name, seed), space, seed)


def run_one(ds: Dataset, sampler: str, seed: int, ceilings: dict[str, float | None] | None = None,
            budget: int | None = None) -> Run:
    budget = budget or len(ds.space)
    stop_ms = ds.best["time_ms"] / (1.0 - min(TARGETS))
    factory = _factory(sampler, ds, ceilings)
    name = f"bench-{sampler}" if factory else sampler

    def progress(result, done) -> None:
        if result.best and result.best["time_ms"] <= stop_ms:
            raise _Reached

    with tempfile.TemporaryDirectory() as tmp:
        db = store.open_db(Path(tmp) / "bench.sqlite")
        db.execute("PRAGMA synchronous = OFF")  # a throwaway database: no need to wait for the disk
        backend = ReplayBackend(ds.path, ds.shape)
        try:
            if factory:
                with samplers.bind(name, factory):
                    run_search(db, backend, ds.families, Limits(), sampler=name, trials=budget, seed=seed,
                               start_from_defaults=False, fresh=False, progress=progress)  # the sampler alone
            else:
                run_search(db, backend, ds.families, Limits(), sampler=name, trials=budget, seed=seed,
                           start_from_defaults=False, fresh=False, progress=progress)
        except _Reached:
            pass
        rows = list(db.query("SELECT t.cached, r.status, r.time_ms, r.reps FROM trials t "
                             "JOIN results r ON r.id = t.result_id ORDER BY t.id"))
        db.close()
    return _tally(Run(sampler, seed), rows, ds.best["time_ms"])


def _tally(run: Run, rows: list[dict], best_ms: float) -> Run:
    new, seconds, best = 0, 0.0, math.inf
    for row in rows:
        if not row["cached"] and row["status"] != "invalid":
            new += 1
            seconds += trial_seconds(row)
        if row["status"] == "ok":
            best = min(best, row["time_ms"])
        for t in TARGETS:
            if t not in run.new and best <= best_ms / (1.0 - t):
                run.new[t], run.seconds[t] = new, seconds
    for t in TARGETS:
        run.new.setdefault(t, None)
        run.seconds.setdefault(t, None)
    run.total_new = new
    return run


def skip_reason(sampler: str, ds: Dataset, ceilings: dict | None) -> str | None:
    """Why a sampler is left out for this dataset, or None to run it."""
    if sampler == "cmaes":
        return samplers.CMAES_NOTE
    if samplers.missing(sampler):
        return f"skipped: {samplers.missing(sampler)}"
    if sampler == "model" and not ceilings:
        return "skipped: no ceilings file (benchmarks/model_ceilings.py writes it)"
    if sampler == "model" and ceilings and not any(ceilings.get(c.name) for c in ds.space):
        whole = sum(count_valid(f, Limits()) for f in ds.families)
        return ("skipped: the ceilings file has none of these configs (benchmarks/model_ceilings.py computes them "
                f"from each config's SASS, which for the whole {'+'.join(f.name for f in ds.families)} space "
                f"is {whole:,} compiles)")
    return None


def load_ceilings(path: str | Path | None) -> dict[str, float | None] | None:
    if not path:
        return None
    return json.loads(Path(path).read_text())["ceilings"]


_JOB: tuple[Dataset, dict | None] | None = None  # what the forked workers of bench(jobs > 1) run against


def _run_job(sampler: str, seed: int) -> Run:
    assert _JOB is not None, "bench() sets the job before it forks its workers"
    ds, ceilings = _JOB
    return run_one(ds, sampler, seed, ceilings)


def bench(ds: Dataset, sampler_names: list[str], seeds: list[int], ceilings: dict | None = None,
          log: Callable[[str], None] | None = None, jobs: int = 1) -> tuple[dict[str, list[Run]], dict[str, str]]:
    """Every sampler over every seed; returns the runs and the reasons for those skipped.

    jobs > 1 runs the (sampler, seed) pairs in that many forked processes; each run is seeded and
    has its own database, so the results are the same as in one process."""
    global _JOB
    runs: dict[str, list[Run]] = {}
    skipped: dict[str, str] = {}
    todo = []
    for name in sampler_names:
        reason = skip_reason(name, ds, ceilings)
        if reason:
            skipped[name] = reason
        else:
            todo.append(name)
    start = time.monotonic()
    if jobs > 1 and todo:
        _JOB = (ds, ceilings)
        try:
            with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("fork")) as pool:
                futures = {name: [pool.submit(_run_job, name, seed) for seed in seeds] for name in todo}
                for name in todo:
                    runs[name] = [f.result() for f in futures[name]]
                    if log:
                        log(f"{ds.name}: {name} done ({len(seeds)} seeds, {time.monotonic() - start:.0f} s since the start)")
        finally:
            _JOB = None
        return runs, skipped
    for name in todo:
        start = time.monotonic()
        runs[name] = [run_one(ds, name, seed, ceilings) for seed in seeds]
        if log:
            log(f"{ds.name}: {name} done ({len(seeds)} seeds, {time.monotonic() - start:.0f} s)")
    return runs, skipped


# --------------------------------------------------------------------------- the report

def _stats(values: list[float | None]) -> tuple[float, float, float] | None:
    """Median and interquartile range, a run that never reached counting as infinite."""
    xs = sorted(math.inf if v is None else float(v) for v in values)
    if not xs:
        return None
    if len(xs) == 1:
        return xs[0], xs[0], xs[0]
    q1, _, q3 = statistics.quantiles(xs, n=4, method="inclusive") if all(map(math.isfinite, xs)) else _iqr(xs)
    return statistics.median(xs), q1, q3


def _iqr(xs: list[float]) -> tuple[float, float, float]:
    """Quartiles by position (inf-safe: interpolating with inf gives nan)."""
    n = len(xs)
    return xs[(n - 1) // 4], xs[(n - 1) // 2], xs[(3 * (n - 1)) // 4]


def _fmt(stat: tuple[float, float, float] | None, digits: int = 0) -> str:
    if stat is None:
        return "-"
    med, q1, q3 = stat

    def f(x: float) -> str:
        return "never" if math.isinf(x) else f"{x:.{digits}f}"

    return f"{f(med)} [{f(q1)}-{f(q3)}]"


def table(ds: Dataset, runs: dict[str, list[Run]], skipped: dict[str, str]) -> str:
    """The markdown for one dataset: a header of facts, then one row per sampler."""
    n = len(ds.space)
    seeds = max((len(r) for r in runs.values()), default=0)
    kind = "exhaustive" if ds.exhaustive else f"NOT exhaustive: {len(ds.recorded)} of {len(ds.valid)} valid configs recorded; searched within the recorded set"
    best = ds.best
    lines = [
        f"### {ds.name}: {', '.join(f.name for f in ds.families)} at {'x'.join(map(str, ds.shape))}",
        "",
        f"- data: {ds.label}; {kind}",
        f"- reference best: `{best['kernel']}` {best['time_ms']:.3f} ms ({best.get('tflops') or 0:.2f} TFLOP/s)",
        f"- space searched: {n} configs; within 5%: {ds.within(0.05)}, within 2%: {ds.within(0.02)}; {seeds} seeds per sampler",
        "- trials = new measurements (refused and reused configs are free); median [interquartile range]; "
        "\"never\": not reached within the whole space; vs random = random's median trials to 2% / this one's",
        "",
        "| sampler | trials to 5% | trials to 2% | % of space to 2% | sim. s to 2% | reached 2% | vs random (2%) |",
        "|---|---|---|---|---|---|---|",
    ]
    base = _stats([r.new[0.02] for r in runs.get("random", [])])
    for name, rs in runs.items():
        t5, t2 = _stats([r.new[0.05] for r in rs]), _stats([r.new[0.02] for r in rs])
        s2 = _stats([r.seconds[0.02] for r in rs])
        pct = (100.0 * t2[0] / n) if t2 and math.isfinite(t2[0]) else math.inf
        reached = sum(r.new[0.02] is not None for r in rs)
        score = "-" if not base or not t2 else (f"{base[0] / t2[0]:.2f}x" if math.isfinite(t2[0]) and math.isfinite(base[0]) else "n/a")
        lines.append(f"| {name} | {_fmt(t5)} | {_fmt(t2)} | {'never' if math.isinf(pct) else f'{pct:.1f}%'} | "
                     f"{_fmt(s2)} | {reached}/{len(rs)} | {score} |")
    for name, reason in skipped.items():
        lines.append(f"| {name} | {reason} | | | | | |")
    return "\n".join(lines) + "\n"


def _spread(values: list[float | None]) -> dict | None:
    """Median, quartiles (as in the table), min and max; None stands for "never reached"."""
    stat = _stats(values)
    if stat is None:
        return None
    xs = sorted(math.inf if v is None else float(v) for v in values)

    def j(x: float) -> float | None:
        return None if math.isinf(x) else round(x, 3)

    return {"median": j(stat[0]), "q1": j(stat[1]), "q3": j(stat[2]), "min": j(xs[0]), "max": j(xs[-1])}


def summary(ds: Dataset, runs: dict[str, list[Run]], skipped: dict[str, str]) -> dict:
    """One dataset's figures, machine-readable: what table() prints, plus min, max and each seed's count.

    Trial counts are new measurements; null means "never reached within the whole space"."""
    n = len(ds.space)
    base = _stats([r.new[0.02] for r in runs.get("random", [])])
    samplers_out = {}
    for name, rs in runs.items():
        t2 = _stats([r.new[0.02] for r in rs])
        mean2 = t2[0] if t2 is not None and math.isfinite(t2[0]) else None  # the mean, where finite
        samplers_out[name] = {
            "trials_to_5pct": _spread([r.new[0.05] for r in rs]),
            "trials_to_2pct": _spread([r.new[0.02] for r in rs]),
            "pct_of_space_to_2pct": round(100.0 * mean2 / n, 3) if mean2 is not None else None,
            "sim_seconds_to_2pct": _spread([r.seconds[0.02] for r in rs]),
            "reached_2pct": sum(r.new[0.02] is not None for r in rs),
            "vs_random_2pct": (round(base[0] / mean2, 4) if base and mean2 is not None and math.isfinite(base[0]) else None),
            "seeds": [r.seed for r in rs],
            "per_seed_trials_to_2pct": [r.new[0.02] for r in rs],
        }
    return {
        "name": ds.name,
        "shape": list(ds.shape),
        "families": [f.name for f in ds.families],
        "data": ds.label,
        "exhaustive": ds.exhaustive,
        "space": n,
        "within_5pct": ds.within(0.05),
        "within_2pct": ds.within(0.02),
        "reference_best": {"kernel": ds.best["kernel"], "time_ms": ds.best["time_ms"]},
        "samplers": samplers_out,
        "skipped": skipped,
    }
