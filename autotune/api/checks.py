"""The rules for a search's arguments, written once: the Python API raises AutotuneError with
them (`check`), the command line's options call the same rule (`problem`) as click callbacks,
so `autotune.tune(trials=0)` and `autotune search --trials 0` are refused alike."""
from __future__ import annotations

import os
from typing import Any, Callable

from autotune.backends.kinds import BACKENDS
from autotune.errors import AutotuneError
from autotune.search import SAMPLERS

SEED_MAX = 2**32 - 1  # Optuna's samplers (numpy's RandomState) take seeds of 32 bits
REMEASURE = ("failed", "stale")

Rule = Callable[[Any], "str | None"]


def whole(low: int, high: int | None = None) -> Rule:
    """An int (not a bool, not a float) within [low, high]."""
    def rule(value: Any) -> str | None:
        if isinstance(value, int) and not isinstance(value, bool) and low <= value and (high is None or value <= high):
            return None
        return f"must be a whole number from {low} to {high}" if high is not None else f"must be a whole number of at least {low}"
    return rule


# The longest wait a timeout may set: about 11.6 days. Python's waits on locks and processes refuse timeouts from
# about 4.3e6 s on (OverflowError), and no search waits that long on purpose.
MAX_SECONDS = 1e6


def seconds(value: Any) -> str | None:
    """A finite number of seconds above 0 (nan and inf would never end or never start), at most MAX_SECONDS."""
    try:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value <= MAX_SECONDS
    except OverflowError:
        ok = False
    return None if ok else f"must be a number of seconds above 0 and at most {MAX_SECONDS:g}"


# More worker (or compile) processes than any host's cores: 99999 --workers forked until the host stalled, while
# on a GPU each worker holds a CUDA context of its own.
MAX_PROCESSES = 256


def device_indices(value: Any) -> str | None:
    """A tuple (or list) of CUDA device indices, at least one."""
    if isinstance(value, (tuple, list)) and value and all(
            isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in value) and len(set(value)) == len(value):
        return None
    return "must be a tuple of CUDA device indices (whole numbers from 0), at least one, each once"


def path(value: Any) -> str | None:
    return None if isinstance(value, (str, os.PathLike)) and os.fspath(value) else "is not a path (a str or a Path)"


def one_of(choices: tuple[str, ...]) -> Rule:
    return lambda value: None if value in choices else f"must be one of {', '.join(choices)}"


def optional(rule: Rule) -> Rule:
    """None means the default."""
    return lambda value: None if value is None else rule(value)


RULES: dict[str, Rule] = {
    "trials": whole(1), "batch": whole(1), "workers": optional(whole(1, MAX_PROCESSES)),
    "compile_jobs": optional(whole(1, MAX_PROCESSES)), "devices": optional(device_indices), "replay_db": optional(path),
    "seed": whole(0, SEED_MAX), "timeout": optional(seconds), "kernel_timeout": optional(seconds),
    "total_timeout": optional(seconds),
    "sampler": one_of(SAMPLERS), "backend": one_of(BACKENDS), "remeasure": optional(one_of(REMEASURE)),
}


def problem(name: str, value: Any) -> str | None:
    """What is wrong with the argument `name` (None: nothing)."""
    return RULES[name](value)


def check(name: str, value: Any) -> None:
    why = problem(name, value)
    if why:
        option = "--" + name.replace("_", "-")
        raise AutotuneError(f"{name}={value!r} {why} ({option} on the command line)")


def check_search(study: str | None = None, storage: str | None = None, **values: Any) -> None:
    """Every argument of a search that has a rule, and --study's need of --storage."""
    for name, value in values.items():
        check(name, value)
    if storage is not None and not isinstance(storage, str):  # an empty one, search.study.open_storage refuses
        raise AutotuneError(f"storage={storage!r}: pass a journal file's path or a database URL (a str), or None")
    if study is not None and not (isinstance(study, str) and study.strip()):
        raise AutotuneError(f"study={study!r}: pass a study's name (a str), or None for a name that says its space")
    if study is not None and storage is None:
        raise AutotuneError("--study names a study kept in --storage; without --storage each search is a fresh "
                            "in-memory study (it still reuses every result in --db)")
