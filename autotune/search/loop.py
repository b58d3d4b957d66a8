"""The search loop: Optuna proposes configs, search.plan and search.measure refuse, reuse or
measure them, search.study tells the outcome back.

Results already in the database for this GPU model and shape are fed to the study before it
starts, so a new search begins where the last one stopped. `--trials` counts new measurements:
configs refused by a constraint or answered from the database are recorded but not counted, and
each such wasted proposal makes the search enqueue a new valid config next to it (search.fresh).

Several backends (one per worker) each run the ask-evaluate-tell loop in a thread of their
own, with a database connection of their own, on one study. With `storage` the study lives
in a database (Optuna RDB: PostgreSQL, ...; or a journal file) and processes on several
hosts can share it; without, it is in memory and re-learns from the results table each run.
"""
from __future__ import annotations

import contextlib
import itertools
import logging
import os
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Iterator, Sequence

import optuna
import sqlite_utils
from optuna.trial import TrialState

from autotune import store
from autotune.backends.base import Backend
from autotune.backends.outcome import INVALID, OK
from autotune.search.fresh import Fresh
from autotune.search.left import KNOWN_AT_MOST, Left
from autotune.search.measure import Evaluated, evaluate
from autotune.search.plan import plan, stale_source
from autotune.search.ranking import candidates, make_ranker
from autotune.search.samplers import kind_of, make_sampler
from autotune.search.starts import shape_starts
from autotune.search.study import (
    Storage,
    check_same_space,
    fail_orphans,
    open_storage,
    study_name,
    suggest,
    tell,
    trial_params,
    warm_start,
)
from autotune.space import Config, Family, Limits, at_shape, iter_valid
from autotune.space.devices import for_device
from autotune.store.claims import ServerClaims, claims_for

if TYPE_CHECKING:
    from autotune.search.pipeline import Compiler

MAX_TRIALS_PER_NEW = 10  # a sampler that keeps proposing measured configs stops eventually


@dataclass
class SearchResult:
    study: str
    trials: int = 0
    new: int = 0
    skipped: int = 0  # no row, no count: another worker was measuring it, or a value of another family was proposed
    best: dict | None = None
    statuses: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    interrupted: bool = False
    workers: int = 1
    exhausted: bool = False  # every valid config of the space has a result at the shape: it stopped early


@dataclass
class _Run:
    """What the workers of one search share; counters change under `lock`."""

    study: optuna.Study
    families: list[Family]
    limits: Limits
    peak_tflops: float | None
    result: SearchResult
    trials: int
    budget: int
    deadline: float | None
    stop: threading.Event
    progress: Callable | None = None
    lock: threading.Condition = field(default_factory=threading.Condition)
    pending: int = 0
    error: BaseException | None = None
    server: ServerClaims | None = None  # the claims of hosts sharing the study, where there are several
    compiler: Compiler | None = None  # the compile processes the GPU workers share (pipeline.py)
    redo: store.Redo | None = None  # recorded rows measured again rather than reused (--remeasure)
    depth: int = 1  # trials with a kernel to build each GPU worker keeps asked ahead
    fresh: Fresh | None = None  # fresh configs enqueued in place of wasted proposals (search.fresh)
    left: Left = field(default_factory=lambda: Left(None))  # the valid configs not met yet (search.left)

    def wanted(self) -> int:
        """New measurements the search still needs beyond those in flight (what asking ahead can use)."""
        with self.lock:
            return self.trials - self.result.new - self.pending

    def take_slot(self) -> bool:
        """Whether this worker may start another trial; waits while the ones in flight decide it."""
        with self.lock:
            while True:
                r = self.result
                if self.stop.is_set() or self.error or (self.deadline and time.monotonic() > self.deadline):
                    return False
                if r.new >= self.trials or r.trials + r.skipped + self.pending >= self.budget or self.left.exhausted:
                    return False
                if r.new + self.pending < self.trials:
                    self.pending += 1
                    return True
                self.lock.wait(0.5)  # trials in flight may still turn out reused, freeing a slot

    def end_slot(self, done: Evaluated | None) -> None:
        with self.lock:
            self.pending -= 1
            if done is None:
                self.result.skipped += 1
            else:
                self.left.met(done.row["kernel"])
                _account(self.result, done)
                if self.progress:
                    self.progress(self.result, done)
            self.lock.notify_all()


def run_search(db: sqlite_utils.Database, backends: Backend | Sequence[Backend], families: list[Family],
               limits: Limits, *, sampler: str = "tpe-mv", trials: int = 60, timeout: float | None = None,
               seed: int | None = 0, peak_tflops: float | None = None, progress=None,
               storage: str | Storage | None = None,
               study: str | None = None, stop: threading.Event | None = None,
               compile_jobs: int | None = None, start_from_defaults: bool = True,
               remeasure: tuple[str, ...] = (), remeasure_stale: bool = False,
               note: Callable[[str], None] | None = None, fresh: bool = True,
               compiler: Compiler | None = None) -> SearchResult:
    """Search until `trials` new measurements, `timeout` seconds, or `stop` is set (the
    trials in flight finish first). KeyboardInterrupt ends it at once, marked interrupted.
    compile_jobs: processes compiling ahead for GPU workers (default pipeline.default_jobs(): 8 per GPU).
    start_from_defaults: measure first the best configs recorded at the nearest shapes
    (search.starts), then each family's default config (the sampler benchmark turns it off to
    compare samplers alone). remeasure: statuses whose rows recorded before this search are
    measured again when proposed, rather than reused (outcome.FAILED). remeasure_stale: so are rows
    measured from a source other than today's rendering (plan.stale_source). note: receives the line
    that says where the search starts. fresh: enqueue a new valid config next to each wasted
    proposal (search.fresh; the sampler benchmark turns it off, as the defaults). compiler: compile processes
    the caller keeps across searches (start_compiler) and closes; None: this search starts and closes its own."""
    families, refused = for_device(families, limits)  # the device's own space: its waves, its architecture's families
    for line in refused:
        if note:
            note(f"{line}: not searched")
    stale = stale_source(families, limits) if remeasure_stale else None
    redo = store.Redo(tuple(remeasure), store.now(), stale) if remeasure or stale else None
    optuna.logging.set_verbosity(logging.WARNING)
    workers = [backends] if isinstance(backends, Backend) else list(backends)
    first = workers[0]
    families = [at_shape(f, first.shape) for f in families]  # no trial on a twin of another config at this shape
    grid = kind_of(sampler).enqueues_grid  # an unknown sampler is refused here, before any storage is opened
    where = open_storage(storage)
    shared = where.persistent
    name = study or study_name(families, first.shape, first.name, sampler, seed, shared)
    check_same_space(where, name, families)
    # workers of one shared study must not all draw the same "random" proposals
    sampler_seed = seed + os.getpid() if shared and seed is not None else seed
    opt = optuna.create_study(study_name=name, storage=where.optuna, load_if_exists=True, direction="maximize",
                              sampler=make_sampler(sampler, sampler_seed))
    fail_orphans(opt)
    measured = warm_start(opt, db, first.shape, first.name, first.provenance["gpu_name"], families, redo)
    budget = trials * MAX_TRIALS_PER_NEW
    if grid:
        budget = _enqueue_grid(opt, families, limits, measured, trials, shared)
    elif start_from_defaults:
        _enqueue_starts(opt, db, first, families, limits, measured, redo, shared, note)
    result = SearchResult(study=name, workers=len(workers))
    left = Left.of(families, first, limits, measured, trials)
    run = _Run(opt, families, limits, peak_tflops, result, trials, budget,
               time.monotonic() + timeout if timeout is not None else None, stop or threading.Event(), progress,
               server=where.claims, redo=redo, left=left,
               fresh=Fresh(opt, measured, seed, shared, left) if fresh and not grid and first.any_config
               else None)
    start = time.monotonic()
    try:
        ahead = sum(b.compile_ahead for b in workers)  # GPU workers: the pool compiles their next trials
        run.compiler = (compiler or start_compiler(workers, compile_jobs)) if ahead else None
        if run.compiler:
            run.depth = -(-run.compiler.jobs // ahead)
        _run_workers(run, db, workers)
    except KeyboardInterrupt:
        run.stop.set()
        result.interrupted = True
    finally:
        if run.compiler is not None and run.compiler is compiler:
            run.compiler.drop_pending()
        elif run.compiler is not None:
            run.compiler.close()
        if not isinstance(storage, Storage):  # opened here: closed here
            where.close()
    result.interrupted = result.interrupted or run.stop.is_set()
    result.exhausted = left.exhausted
    result.seconds = time.monotonic() - start
    return result


def _enqueue_grid(study: optuna.Study, families: list[Family], limits: Limits, measured: set[str], trials: int,
                  shared: bool) -> int:
    """The valid space, in order, less what the database already has, up to `trials` and at most KNOWN_AT_MOST
    configs (search.left says why); returns how many."""
    unmeasured = (c for f in families for c in iter_valid(f, limits) if c.name not in measured)
    todo = list(itertools.islice(unmeasured, min(trials, KNOWN_AT_MOST)))  # lazily: the blocked space is large
    for config in todo:
        # a shared study may hold these already (another worker's run): enqueue each once
        study.enqueue_trial(trial_params(config), skip_if_exists=shared)
    return len(todo)


def _enqueue_starts(study: optuna.Study, db: sqlite_utils.Database, first: Backend, families: list[Family],
                    limits: Limits, measured: set[str], redo: store.Redo | None, shared: bool,
                    note: Callable[[str], None] | None) -> None:
    """The first trials: the nearest shapes' winners and each family's default (fitted to the shape where the
    family has a fit, Family.fit: split-K's splits, skinny's rows, tall's columns; for blocked the best a
    search found on the H200, see autotune/families/blocked.py), in the order search.ranking gives them (the
    time model's where enough rows teach it), so the sampler starts from good kernels and looks around them
    instead of finding that region by luck. In a family narrowed to one layout, the default is that layout's."""
    starts = shape_starts(db, first, families, limits, measured, redo)
    if note:
        note(starts.line())
    pool = candidates(db, first, families, limits, measured, starts)
    for config in make_ranker(db, first, limits).rank(pool, first.shape):
        study.enqueue_trial(trial_params(config), skip_if_exists=shared)


def start_compiler(backends: Sequence[Backend], jobs: int | None = None) -> Compiler | None:
    """GPU workers (compile_ahead) share one pool of compile processes; each keeps its share
    of the jobs asked ahead. The emulator and replay have no NVRTC step worth hiding: None."""
    ahead = sum(b.compile_ahead for b in backends)
    if not ahead:
        return None
    from autotune.search.pipeline import Compiler, default_jobs

    return Compiler(jobs or default_jobs(ahead))


def _run_workers(run: _Run, db: sqlite_utils.Database, backends: list[Backend]) -> None:
    owners = [store.Owner(b.provenance.get("worker") or f"w{i}") for i, b in enumerate(backends)]
    if len(backends) == 1:
        _work(run, db, backends[0], owners[0])
        return
    path = store.path_of(db)  # sqlite3 connections stay in their thread: each worker opens its own
    threads = [threading.Thread(target=_guarded, args=(run, path, b, o), daemon=True, name=o.worker)
               for b, o in zip(backends, owners)]
    for t in threads:
        t.start()
    for t in threads:
        while t.is_alive():
            t.join(0.2)  # short waits: the main thread keeps receiving signals
    if run.error:
        raise run.error


def _guarded(run: _Run, path: str, backend: Backend, owner: store.Owner) -> None:
    try:
        _work(run, store.open_db(path), backend, owner)
    except BaseException as exc:  # the first error stops every worker and is raised by the main thread
        with run.lock:
            run.error = run.error or exc
            run.lock.notify_all()


def _work(run: _Run, db: sqlite_utils.Database, backend: Backend, owner: store.Owner) -> None:
    ahead, proposed = None, _proposed(run, db, backend)
    if run.compiler and backend.compile_ahead:  # GPU workers: compile the next trials meanwhile
        from autotune.search.pipeline import Ahead, planner

        ahead = Ahead(run.study, lambda trial: suggest(trial, run.families), planner(db, backend, run.limits, run.redo),
                      run.compiler, run.depth, run.wanted, proposed)
    try:
        while run.take_slot():
            done = None
            try:
                done = _one_trial(run, db, backend, owner, ahead, proposed)
            finally:
                run.end_slot(done)
    finally:
        if ahead:
            ahead.close()


def _proposed(run: _Run, db: sqlite_utils.Database, backend: Backend) -> Callable[[Config, bool], None] | None:
    """What a worker calls with each config proposed and whether it was wasted (search.fresh)."""
    if run.fresh is None:
        return None
    fresh = run.fresh

    def usable(config: Config) -> bool:
        return plan(db, backend, config, run.limits, run.redo).to_measure

    return lambda config, wasted: fresh.proposed(config, wasted, usable)


def _one_trial(run: _Run, db: sqlite_utils.Database, backend: Backend, owner: store.Owner,
               ahead=None, proposed: Callable[[Config, bool], None] | None = None) -> Evaluated | None:
    asked = ahead.take() if ahead else None
    trial = asked.trial if asked else run.study.ask()
    try:
        config = asked.config if asked else suggest(trial, run.families)
        if config is None:  # a value another family has: nothing to measure
            _pruned(run, trial, "a parameter value outside the chosen family's values")
            return None
        if asked and not asked.settled_by(run.deadline):  # --timeout bounds the search: no compile after it
            _pruned(run, trial, "the search's time ran out while its kernel compiled")
            return None
        trial.set_user_attr("kernel", config.name)
        trial.set_user_attr("owner", f"{owner.host}:{owner.pid}")
        done = evaluate(db, backend, config, run.limits, run.peak_tflops, owner, claims_for(db, run.server),
                        asked.ready if asked else None, run.redo)
        if not asked and proposed:  # asked ahead: the pipeline noted it when it was asked
            proposed(config, done is None or done.cached or done.row["status"] == INVALID)
        if done is None:  # another worker is measuring it: no row, no value
            _pruned(run, trial, "another worker was measuring it")
            return None
        store.insert_trial(db, run.result.study, trial.number, done.row["id"], done.cached, owner.worker)
    except optuna.exceptions.UpdateFinishedTrialError:  # told by another process first (_told_elsewhere)
        return None
    except BaseException:
        run.study.tell(trial, state=TrialState.FAIL, skip_if_finished=True)
        raise
    with _told_elsewhere():
        tell(run.study, trial, done.row)
    return done


def _pruned(run: _Run, trial: optuna.Trial, reason: str) -> None:
    """Tell a trial with nothing measured for it as PRUNED, with why; one another process told first
    is passed over (_told_elsewhere)."""
    trial.set_user_attr("reason", reason)
    run.study.tell(trial, state=TrialState.PRUNED, skip_if_finished=True)


@contextlib.contextmanager
def _told_elsewhere() -> Iterator[None]:
    """Optuna's SQLite storage cannot lock a row, so two processes sharing a study in SQLite can both
    pop one enqueued trial; the one that tells it second finds it finished: Optuna raises
    UpdateFinishedTrialError when the trial finished between its read and its write, and a tell with
    skip_if_finished passes over one read as finished already (without it, a ValueError). The claims
    kept the config from being measured twice, and this process's row stands: nothing is lost but
    its second telling."""
    try:
        yield
    except optuna.exceptions.UpdateFinishedTrialError:
        pass


def _account(result: SearchResult, done: Evaluated) -> None:
    result.trials += 1
    status = done.row["status"]
    result.new += 0 if done.cached or status == INVALID else 1  # refused configs cost no GPU time
    result.statuses[status] = result.statuses.get(status, 0) + 1
    if status == OK and (result.best is None or done.row["time_ms"] < result.best["time_ms"]):
        result.best = done.row
