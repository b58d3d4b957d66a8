"""Compile ahead: while the GPU measures one trial, CPU threads render, compile (NVRTC, into
the on-disk cubin cache) and disassemble (SASS counts, into the kernels table) the trial that
comes next. The worker then finds its cubin cached and evaluate() finds the counts stored, so a
trial costs little more than its GPU time.

The next trial is asked from Optuna before the current one is told; the sampler sees the
current one as running (TPE's constant liar), as it would with one more worker. A trial asked
ahead and never evaluated (the search stopped) is told as pruned, so no trial is left running.
Only GPU workers compile ahead: the emulator and replay have no NVRTC step worth hiding.
"""
from __future__ import annotations

import collections
from concurrent.futures import Future, ThreadPoolExecutor

import optuna
from optuna.trial import TrialState

from . import store
from .compile import compile_source
from .space import Config, Family, Limits, violations

DEPTH = 1  # trials asked ahead per worker: one is enough to hide a compile behind a measurement


class Ahead:
    def __init__(self, study: optuna.Study, families: list[Family], limits: Limits, db_path: str, arch: str,
                 suggest):
        self.study, self.families, self.limits = study, families, limits
        self.db_path, self.arch, self.suggest = db_path, arch, suggest
        self.queue: collections.deque[tuple[optuna.Trial, Config, Future]] = collections.deque()
        self.pool = ThreadPoolExecutor(max_workers=DEPTH + 1, thread_name_prefix="compile-ahead")

    def take(self) -> tuple[optuna.Trial, Config]:
        """The next trial to evaluate (asked earlier, its compile under way), then ask one more."""
        if not self.queue:
            self._ask()
        trial, config, _ = self.queue.popleft()
        while len(self.queue) < DEPTH:
            self._ask()
        return trial, config

    def close(self) -> None:
        for trial, _, _ in self.queue:
            self.study.tell(trial, state=TrialState.PRUNED, skip_if_finished=True)
        self.queue.clear()
        self.pool.shutdown(wait=True, cancel_futures=True)

    def _ask(self) -> None:
        trial = self.study.ask()
        config = self.suggest(trial, self.families)
        self.queue.append((trial, config, self.pool.submit(self._warm, config)))

    def _warm(self, config: Config) -> None:
        """Fill the caches the trial will read; any failure here is the trial's to report."""
        if violations(config, self.limits):
            return
        from . import explain
        from .codegen import render

        try:
            source = render(config, self.limits)
            if compile_source(source, config.name, self.arch).ok:
                explain.kernel_counts(config, source, self.arch, store.open_db(self.db_path))
        except Exception:  # evaluate() compiles and explains again, and records what went wrong
            pass
