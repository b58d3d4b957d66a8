"""Compile ahead: while the GPU measures one trial, a pool of CPU processes compiles the
kernels of the trials that come next, so that a trial costs little more than its GPU time.

The flow. Each GPU worker keeps `depth` trials asked ahead of the one it measures whose
kernels need building. For each, the pool compiles the source into the on-disk cubin cache
(compile.py) and, where the kernels table has no SASS counts for it yet, disassembles it and
returns the counts. search.measure.evaluate() waits for that work just before the GPU (never slower than
compiling again: the job started earlier), finds the cubin cached, and saves the counts with
the row, so nvdisasm runs on the GPU loop only when the pool failed. Trials that need no
building (a refused config, one the database has, one already submitted) are asked too but
cost the pool nothing and do not count towards the depth.

Why processes: NVRTC, nvdisasm and the Python that parses the SASS are CPU-bound, and the
parsing holds the GIL, so threads would queue behind one another. Why "spawn": the search
process runs threads (one per GPU worker), and a fork copies the locks they hold. A child
imports the compiler and loads NVRTC once (about half a second, in parallel with the first
trial) and then serves jobs until the search ends. Only the search process writes SQLite:
children return the counts; they never open the database.

Trials are asked from Optuna before the current one is told; the sampler sees them running
(TPE's constant liar), as it would with more workers. A trial asked ahead and never evaluated
(the search stopped) is told as pruned, so no trial is left running. Failures are data: a job
that fails (an NVRTC error, nvdisasm failing, a child that crashed) is simply not ready, and
search.measure.evaluate() compiles again and records what went wrong. Children ignore SIGINT (Ctrl-C is the
search's to handle) and exit when the pool is closed or their parent dies (even by SIGKILL),
so no child outlives the search.
"""
from __future__ import annotations

import collections
import multiprocessing as mp
import os
import threading
import time
from concurrent.futures import Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from autotune import store
from autotune.backends.base import Backend
from autotune.backends.spawn import deaf_to_sigint, sigint_ignored_by_children
from autotune.codegen.render import sha256
from autotune.explain import counts as explain
from autotune.search.plan import plan as plan_trial
from autotune.space import Config, Limits

if TYPE_CHECKING:  # optuna is imported where it is used: pool children import this module and need none of it
    import optuna
    import sqlite_utils

# Compile processes per GPU worker by default: a register-blocked kernel takes NVRTC 1-2 s and its
# measurement about 0.1 s at 4096^3, so 8 of them keep one H200 busy (beyond that the GPU sets the
# pace); two GPUs with the same 8 wait for the compiler (docs/search.md, "Several GPUs").
JOBS_PER_WORKER = 8
WAIT_S = 120.0  # the longest the GPU loop waits for one config's ahead work before compiling it itself
QUEUE_PER_JOB = 4  # trials asked ahead at most per job (refused and reused ones included): bounds a sampler
WATCH_S = 0.2  # how often a child checks whether the pool closed or its parent died


def default_jobs(workers: int = 1) -> int:
    """JOBS_PER_WORKER compile processes for each GPU worker, within the cores less one per worker
    and one for the search itself."""
    return max(1, min((os.cpu_count() or 1) - 1 - workers, JOBS_PER_WORKER * workers))


# --------------------------------------------------------------------------- in a pool process

@dataclass(frozen=True)
class BuildJob:
    """One kernel's ahead work as it crosses to a pool process (a Config cannot: families hold lambdas)."""

    name: str
    source: str
    arch: str
    counts: bool  # disassemble too: the kernels table has no counts for this source yet


def build(job: BuildJob) -> dict[str, Any] | None:
    """Compile into the disk cache; then the SASS count columns, if asked for. None when
    there are none (not asked for, or the source did not compile: search.measure.evaluate() records why)."""
    from autotune.codegen.nvrtc import compile_source
    from autotune.explain.sass import analyze_cubin

    built = compile_source(job.source, job.name, job.arch)
    if built.timed_out:  # NVRTC runs on in its thread: end this process to free the core (the pool
        os._exit(0)  # starts afresh); the cache's mark tells the GPU worker not to compile it again
    if not built.ok or not job.counts:
        return None
    return explain.count_columns(analyze_cubin(job.name, built.cubin, built.arch))


def _child_start(stop: Any, parent: int) -> None:
    """A pool process's first step: deaf to Ctrl-C, gone with the pool or the search, NVRTC loaded."""
    deaf_to_sigint()  # the search stops on Ctrl-C and closes the pool itself
    threading.Thread(target=_exit_when_done, args=(stop, parent), daemon=True).start()
    from autotune.codegen.nvrtc import nvrtc_version

    nvrtc_version()  # load NVRTC now rather than in the first job


def _exit_when_done(stop: Any, parent: int) -> None:
    """Leave at once (also mid-compile) when the pool closes or the search is gone."""
    while not stop.poll(WATCH_S) and os.getppid() == parent:  # the pipe reads as ended once the pool closes
        pass
    os._exit(0)


# --------------------------------------------------------------------------- in the search

class Compiler:
    """The compile processes of one search, shared by its GPU workers. Each source is
    submitted once: a config proposed again gets the first proposal's Future."""

    def __init__(self, jobs: int):
        self.jobs = max(1, jobs)
        self._context = mp.get_context("spawn")
        # a pipe, not an Event: a child ended mid-wait (a compile past the limit) would leave an
        # Event's condition waiting for it forever on set()
        self._stop, self._stopping = self._context.Pipe(duplex=False)
        self._lock = threading.Lock()
        self._work: dict[tuple[str, str], Future] = {}
        self._closed = False
        self._pool = self._start()

    def submit(self, job: BuildJob) -> Future | None:
        """The work on this source (new, or submitted earlier); None once closed."""
        key = (sha256(job.source), job.arch)
        with self._lock:
            if self._closed:
                return None
            if key not in self._work:
                self._work[key] = self._submit(job)
            return self._work[key]

    def drop_pending(self) -> None:
        """Cancel the jobs no child has taken yet (a search that ends leaves its trials asked ahead): a pool kept
        for the next search (autotune cover, the suite) starts on that search's jobs, not on these."""
        with self._lock:
            for key, work in list(self._work.items()):
                if work.cancel():
                    del self._work[key]

    def close(self) -> None:
        """Cancel what has not started, stop the children (mid-job too) and reap them."""
        with self._lock:
            self._closed = True
        self._stopping.close()
        self._pool.shutdown(wait=True, cancel_futures=True)

    def _start(self) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(self.jobs, mp_context=self._context, initializer=_child_start,
                                   initargs=(self._stop, os.getpid()))

    def _submit(self, job: BuildJob) -> Future:
        try:
            return self._submit_quietly(job)
        except BrokenProcessPool:  # a child died (NVRTC crashed, say): its jobs failed; go on with a fresh pool
            self._pool.shutdown(wait=False)
            self._pool = self._start()
            return self._submit_quietly(job)

    def _submit_quietly(self, job: BuildJob) -> Future:
        """Submit; a child it starts is born deaf to Ctrl-C (sigint_ignored_by_children)."""
        with sigint_ignored_by_children():
            return self._pool.submit(build, job)


def ready(work: Future | None, limit_s: float = WAIT_S) -> dict[str, Any] | None:
    """Wait for a config's ahead work: its SASS counts, or None (none asked for, or the work
    failed, was cancelled or is late: the caller then compiles and explains itself)."""
    if work is None:
        return None
    try:
        return work.result(timeout=limit_s)
    except Exception:  # failures are the trial's to report, when search.measure.evaluate() compiles again
        return None


BuildPlan = Callable[[Config], "BuildJob | None"]


def planner(db: sqlite_utils.Database, backend: Backend, limits: Limits, redo: store.Redo | None = None) -> BuildPlan:
    """What the pool should build for a config: nothing when search.measure.evaluate() would refuse it or
    reuse a row; the counts too when the backend explains and the kernels table lacks them."""
    arch = backend.provenance["arch"]
    counts = explain.wants_counts(backend)

    def build_plan(config: Config) -> BuildJob | None:
        p = plan_trial(db, backend, config, limits, redo)
        if not p.to_measure:
            return None
        return BuildJob(config.name, p.source, arch, counts and not explain.has_counts(db, p.source, arch))

    return build_plan


@dataclass
class Asked:
    """A trial asked ahead, its config, and the pool's work on it (None: nothing to build)."""

    trial: optuna.Trial
    config: Config | None  # None: a value of another family was proposed (nothing to measure)
    work: Future | None

    def ready(self) -> dict[str, Any] | None:
        return ready(self.work)

    def settled_by(self, deadline: float | None) -> bool:
        """Whether its ahead work (if any) ends by `deadline` (time.monotonic()): built, failed or given
        up. Past the deadline the search starts no new wait, nor a compile of its own on the GPU loop."""
        if self.work is None or deadline is None:
            return True
        wait([self.work], timeout=max(0.0, min(deadline - time.monotonic(), WAIT_S)))
        return self.work.done() or time.monotonic() < deadline  # WAIT_S passed first: evaluate() compiles


class Ahead:
    """One GPU worker's trials asked ahead, in the order they are evaluated.

    wanted() says how many new measurements the search still needs beyond those in flight:
    near the end of a search nothing more is asked than can be used."""

    def __init__(self, study: optuna.Study, suggest: Callable[[optuna.Trial], Config | None], plan: BuildPlan,
                 compiler: Compiler, depth: int, wanted: Callable[[], int] = lambda: 1 << 30,
                 proposed: Callable[[Config, bool], None] | None = None):
        self.study, self.suggest, self.plan, self.compiler = study, suggest, plan, compiler
        self.proposed = proposed  # told each config and whether it was wasted (nothing to build)
        self.depth, self.wanted = max(1, depth), wanted
        self.queue: collections.deque[Asked] = collections.deque()

    def take(self) -> Asked:
        """The next trial to evaluate (asked earlier, its compile under way); then ask more."""
        if not self.queue:
            self._ask()
        asked = self.queue.popleft()
        try:
            self._fill()
        except BaseException:  # interrupted while asking more: this one was not evaluated either
            self.queue.appendleft(asked)  # close() tells it pruned
            raise
        return asked

    def close(self) -> None:
        """Tell every trial asked ahead and never taken as pruned (the pool is the search's to close)."""
        from optuna.trial import TrialState

        while self.queue:
            asked = self.queue.popleft()
            self.study.tell(asked.trial, state=TrialState.PRUNED, skip_if_finished=True)

    def _fill(self) -> None:
        limit = QUEUE_PER_JOB * self.depth
        while len(self.queue) < limit and self._pending_work() < min(self.depth, self.wanted()):
            self._ask()

    def _pending_work(self) -> int:
        """Kernels the queue's trials bring to the pool (built already or not): what depth counts.
        A config proposed twice shares its work and counts once."""
        return len({id(a.work) for a in self.queue if a.work is not None})

    def _ask(self) -> None:
        trial = self.study.ask()
        try:
            config = self.suggest(trial)
            job = self.plan(config) if config is not None else None
            if config is not None and self.proposed:
                self.proposed(config, job is None)
        except BaseException:
            from optuna.trial import TrialState

            self.study.tell(trial, state=TrialState.FAIL, skip_if_finished=True)
            raise
        self.queue.append(Asked(trial, config, self.compiler.submit(job) if job else None))
