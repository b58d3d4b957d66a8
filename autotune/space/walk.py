"""Walking a family's space: every valid config, counts, and uniform random draws.

A constraint is checked as soon as every parameter it reads (Constraint.reads) is bound, so
refused branches are cut early: the blocked family has millions of combinations but a few
hundred thousand valid ones.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import replace
from typing import Iterator

from autotune.space.config import Config, Constraint, Family, Limits, Params, arch_refusal, violations


def enumerate_space(family: Family, limits: Limits = Limits()) -> Iterator[tuple[Config, list[str]]]:
    """Every combination of the family's values, with its violations (empty = valid)."""
    names = [p.name for p in family.params]
    for combo in itertools.product(*(p.values for p in family.params)):
        config = Config(family, tuple(zip(names, combo)))
        yield config, violations(config, limits)


def iter_valid(family: Family, limits: Limits = Limits()) -> Iterator[Config]:
    """The valid configs of a family, lazily, in declaration order. Parameters are bound one
    at a time and each constraint is checked once every parameter it reads is bound. None on a
    device whose architecture the family cannot run on (Family.needs)."""
    names = [p.name for p in family.params]
    if arch_refusal(family, limits):
        return

    def walk(i: int, bound: Params, pending: list[Constraint]) -> Iterator[Config]:
        if i == len(names):
            yield Config(family, tuple((n, bound[n]) for n in names))
            return
        for value in family.params[i].values:
            bound[names[i]] = value
            undecided = _undecided(pending, bound, limits)
            if undecided is not None:
                yield from walk(i + 1, bound, undecided)
        del bound[names[i]]

    yield from walk(0, {}, list(family.constraints))


def _undecided(pending: list[Constraint], bound: Params, limits: Limits) -> list[Constraint] | None:
    """The constraints not yet decidable; None as soon as one is decided false."""
    left = []
    for c in pending:
        if not all(name in bound for name in c.reads):
            left.append(c)
        elif not c.holds(bound, limits):
            return None
    return left


def _key(family: Family, limits: Limits) -> tuple:
    """A cache key that tells a narrowed family from the whole one."""
    return (family.name, tuple(p.values for p in family.params), limits)


_VALID: dict[tuple, tuple[Config, ...]] = {}


def valid_configs(family: Family, limits: Limits = Limits()) -> list[Config]:
    """All valid configs of a family (kept once per process). Fine for naive and tiled; for
    the large blocked space prefer iter_valid, count_valid or random_valid."""
    key = _key(family, limits)
    if key not in _VALID:
        _VALID[key] = tuple(iter_valid(family, limits))
    return list(_VALID[key])


_COUNTS: dict[tuple, int] = {}


def count_valid(family: Family, limits: Limits = Limits()) -> int:
    """How many valid configs the family has. A parameter no constraint reads (TA, TB, BLAS)
    multiplies the count by its number of values, so the walk leaves it out."""
    key = _key(family, limits)
    if arch_refusal(family, limits):
        return 0
    if key not in _COUNTS:
        read = {name for c in family.constraints for name in c.reads}
        walked = replace(family, params=tuple(p for p in family.params if p.name in read))
        free = math.prod(len(p.values) for p in family.params if p.name not in read)
        _COUNTS[key] = free * _count(walked, limits)
    return _COUNTS[key]


def _count(family: Family, limits: Limits) -> int:
    """The length of iter_valid, walked the same way, but the completions of a partial config are
    counted once per distinct values of what its undecided constraints read: nothing else bound so
    far can change which completions are valid."""
    params = family.params
    memo: dict[tuple, int] = {}

    def walk(i: int, bound: Params, pending: list[Constraint]) -> int:
        if i == len(params):
            return 1
        live = sorted({n for c in pending for n in c.reads if n in bound})
        key = (i, tuple(id(c) for c in pending), tuple(bound[n] for n in live))
        if key not in memo:
            total = 0
            for value in params[i].values:
                bound[params[i].name] = value
                undecided = _undecided(pending, bound, limits)
                if undecided is not None:
                    total += walk(i + 1, bound, undecided)
            del bound[params[i].name]
            memo[key] = total
        return memo[key]

    return walk(0, {}, list(family.constraints))


def combinations(family: Family) -> int:
    n = 1
    for p in family.params:
        n *= len(p.values)
    return n


def random_valid(family: Family, rng, limits: Limits = Limits(), fixed: Params | None = None,
                 tries: int = 20000) -> Config | None:
    """A uniformly drawn valid config (rejection sampling), with some values fixed; None if
    none was found in `tries` draws (e.g. a value no valid config takes)."""
    fixed = fixed or {}
    for _ in range(tries):
        values = tuple((p.name, fixed[p.name] if p.name in fixed else rng.choice(p.values)) for p in family.params)
        config = Config(family, values)
        if not violations(config, limits):
            return config
    return None


