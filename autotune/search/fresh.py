"""A fresh config in place of each wasted proposal.

A proposal is wasted when the search already has its config (a row recorded before, or proposed
earlier in this search, perhaps by another worker) or a constraint refuses it. It is still told
to the study (the sampler learns that the region is known, or bad), but no GPU work comes of it,
and Optuna's TPE spends tens of milliseconds of Python per proposal, more as trials accumulate,
while holding the GIL. On a 14-parameter categorical space it re-proposes what it has measured
most of the time (offline, 511 proposals for 120 new measurements), so one GPU waits for the
sampler and a second GPU shares that serial cost instead of halving the work
(docs/search.md, "Fresh proposals instead of re-proposals").

So for each wasted proposal the search enqueues a config next to it that is new and valid: one
parameter changed (every such change tried, in a seeded random order), else two. An enqueued trial
has every parameter fixed, so asking for it costs the sampler nothing, and its result teaches the
sampler like any other. The sampler benchmark leaves this out (it compares samplers alone), and so
does a replay (Backend.any_config: it has rows for its dataset's configs only).
"""
from __future__ import annotations

import random
import threading
from typing import Callable

import optuna

from autotune.search.left import Left
from autotune.search.study import trial_params
from autotune.space import Config

PAIR_TRIES = 64  # random two-parameter changes tried when no one-parameter change is usable


def neighbour(config: Config, usable: Callable[[Config], bool], rng: random.Random) -> Config | None:
    """A config one parameter (else two) away from `config` that `usable` accepts, or None."""
    moves = [(p.name, v) for p in config.family.params for v in p.values if v != config.values[p.name]]
    rng.shuffle(moves)
    for move in moves:
        candidate = _moved(config, dict([move]))
        if usable(candidate):
            return candidate
    for _ in range(PAIR_TRIES if len(moves) > 1 else 0):
        first, second = rng.sample(moves, 2)
        if first[0] != second[0] and usable(candidate := _moved(config, dict([first, second]))):
            return candidate
    return None


def _moved(config: Config, changes: dict) -> Config:
    return Config(config.family, tuple((name, changes.get(name, value)) for name, value in config.params))


class Fresh:
    """The configs one search has met, shared by its workers, and the trials it enqueued."""

    def __init__(self, study: optuna.Study, seen: set[str], seed: int | None, shared: bool, left: Left | None = None):
        self.study, self.shared, self.left = study, shared, left
        self._seen = set(seen)  # kernel names: recorded before the search, proposed or enqueued in it
        self._enqueued: set[str] = set()
        self._rng = random.Random(seed)
        self._lock = threading.Lock()

    def proposed(self, config: Config, wasted: bool, usable: Callable[[Config], bool]) -> None:
        """Note a proposal; if wasted (or met before), enqueue a usable neighbour of it.
        `usable` says whether the search would measure a config (not refused, no row to reuse)."""
        with self._lock:
            met = config.name in self._seen and config.name not in self._enqueued
            self._enqueued.discard(config.name)
            self._seen.add(config.name)
            if not (wasted or met):
                return
            new = lambda c: c.name not in self._seen and usable(c)  # noqa: E731
            # no neighbour is new: any config not met yet (search.left), so that the last few are measured too
            fresh = neighbour(config, new, self._rng) or (self.left.pick(new) if self.left else None)
            if fresh is None:
                return
            self._seen.add(fresh.name)
            self._enqueued.add(fresh.name)
        self.study.enqueue_trial(trial_params(fresh), skip_if_exists=self.shared)
