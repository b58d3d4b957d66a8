"""The valid configs a search has not met yet, where the space is small enough to know them all.

A sampler keeps proposing configs that have a result long after none is left to measure (naive at
2x2x2 has 132 valid configs; --trials 1000 asked 8,576 trials and was still asking), so a search
that has met every valid config of its space at the shape stops and says so. Where more configs
are unmet than the new measurements asked for, --trials ends the search first and nothing is kept;
so too where more than KNOWN_AT_MOST are unmet, whatever --trials asks.
"""
from __future__ import annotations

import threading
from typing import Callable

from autotune.backends.base import Backend
from autotune.search.plan import refusals
from autotune.space import Config, Family, Limits, iter_valid

# Knowing more unmet configs than this costs the walk seconds and memory before the first trial (the blocked
# space alone holds millions; --trials 10000000 walked for minutes, deaf to --timeout and Ctrl-C): past it the
# search runs until its trials, its timeout or its sampler's patience (MAX_TRIALS_PER_NEW), as in any large space.
KNOWN_AT_MOST = 20_000


class Left:
    """The unmet configs by name; None: too many to be worth knowing."""

    def __init__(self, configs: dict[str, Config] | None):
        self._left = configs
        self._lock = threading.Lock()

    @classmethod
    def of(cls, families: list[Family], backend: Backend, limits: Limits, met: set[str], trials: int) -> "Left":
        """The configs valid at the backend's shape that `met` (recorded before) does not name."""
        left: dict[str, Config] = {}
        known_at_most = min(trials, KNOWN_AT_MOST)
        for config in (c for f in families for c in iter_valid(f, limits)):
            if config.name in met or refusals(backend, config, limits):
                continue
            left[config.name] = config
            if len(left) > known_at_most:  # lazily: the blocked space is large
                return cls(None)
        return cls(left)

    def met(self, name: str) -> None:
        with self._lock:
            if self._left is not None:
                self._left.pop(name, None)

    @property
    def exhausted(self) -> bool:
        with self._lock:
            return self._left is not None and not self._left

    def pick(self, usable: Callable[[Config], bool]) -> Config | None:
        """An unmet config `usable` accepts: the last few are rarely a neighbour of what is proposed."""
        with self._lock:
            configs = list(self._left.values()) if self._left else []
        return next((c for c in configs if usable(c)), None)
