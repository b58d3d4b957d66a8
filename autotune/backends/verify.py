"""Correctness checks for generated kernels, whatever runs them (the CPU emulator or a GPU).

A backend is any function run(config, source, launch, A, B, M, N, K) -> C, A and B stored as the
config's layout reads them (reference.stored: transposed for TA=1, TB=1). It may raise
an exception that carries a `.kind` (like autotune.backends.sim.SimError); that becomes the row's
status. Nothing GPU-related is imported here.
The tolerance and the reference live in autotune/reference.py, shared with the GPU backend.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from autotune.backends.reference import (  # noqa: F401 (TOLERANCE re-exported)
    FP32_TC,
    INPUT_SETS,
    TOLERANCE,
    UNIFORM,
    abs_product,
    element_violation,
    fp32_error,
    input_sets,
    judge,
    reference,
    relative_error,
    stored,
)
from autotune.codegen.render import render
from autotune.errors import SpaceError
from autotune.space import Config, Family, Launch, combinations, random_valid, shape_violations, valid_configs

# (M, N, K): the degenerate case, primes, and sizes that are not multiples of any tile
# edge or block size, so that every tail guard runs; one power of two for the easy path.
SHAPES: tuple[tuple[int, int, int], ...] = ((1, 1, 1), (17, 33, 9), (100, 37, 129), (64, 64, 64))

SKIPPED = "skipped"  # the config's own rules refuse it at the shape: not run, not a failure

Runner = Callable[[Config, str, Launch, np.ndarray, np.ndarray, int, int, int], np.ndarray]


@dataclass(frozen=True)
class VerifyRow:
    config: str  # config.name
    shape: tuple[int, int, int]
    status: str  # "ok", "wrong", SKIPPED, or the kind of the backend's error (e.g. "barrier")
    error: float  # relative error against the reference; inf when none was computed
    reason: str  # one line; empty when ok
    err_ref: float | None = None  # fp32-tc: FP32's own error against the float64 reference (host stand-in)


def check(config: Config, source: str, shape: tuple[int, int, int], run: Runner, seed: int = 0) -> VerifyRow:
    """Run one config on one shape and hold it to its family's contract (reference.judge) against
    the float64 reference, on each input set the contract names (reference.input_sets): the first
    set that breaks it gives the row, named in its reason; a passing row carries the first set's errors."""
    rows = []
    for inputs in input_sets(config.family.precision):
        rows.append(check_on(config, source, shape, run, seed, inputs))
        if rows[-1].status != "ok":
            return rows[-1]
    return rows[0]


def check_on(config: Config, source: str, shape: tuple[int, int, int], run: Runner, seed: int,
             inputs: str = UNIFORM) -> VerifyRow:
    """check() on one input set (reference.INPUT_SETS)."""
    M, N, K = shape
    A, B = INPUT_SETS[inputs](M, N, K, seed)
    try:
        C = run(config, source, config.geometry(M, N), *stored(A, B, config.values), M, N, K)
    except Exception as exc:  # a backend error with a kind is a result; anything else is a bug
        kind = getattr(exc, "kind", None)
        if not isinstance(kind, str):
            raise
        return VerifyRow(config.name, shape, kind, float("inf"), getattr(exc, "message", str(exc)))
    ref = reference(A, B)
    err = relative_error(C, ref)
    precision = config.family.precision
    err_ref = fp32_error(A, B, ref) if precision == FP32_TC else None
    why = judge(precision, err, err_ref, inputs)
    if why is None:
        element = element_violation(C, ref, abs_product(A, B), K, precision)
        return VerifyRow(config.name, shape, "wrong" if element else "ok", err, element or "", err_ref)
    return VerifyRow(config.name, shape, "wrong", err, describe_wrong(C, ref, why), err_ref)


def describe_wrong(C: np.ndarray, ref: np.ndarray, why: str) -> str:
    """One line: how wrong, how many outputs are unwritten (NaN), and the worst place."""
    if C.shape != ref.shape:
        return f"output has shape {C.shape}, expected {ref.shape}"
    nan = int(np.count_nonzero(~np.isfinite(C)))
    bad = np.where(np.isfinite(C), np.abs(C - ref), np.inf)
    i, j = np.unravel_index(int(np.argmax(bad)), bad.shape)
    where = f"worst at C[{i}][{j}] = {C[i, j]!r} (expected {ref[i, j]:.6g})"
    nans = f"{nan} of {C.size} outputs NaN or inf (never written?); " if nan else ""
    return f"{why}: {nans}{where}"


def verify_configs(
    configs: Sequence[Config], shapes: Sequence[tuple[int, int, int]], run: Runner, seed: int = 0
) -> list[VerifyRow]:
    """Every config on every shape: one row each, in order (config-major). A config that its own
    rules refuse at a shape (space.shape_violations: a workspace too small, a grid too large) is
    not run there: a search would never run it either, so its row is SKIPPED with the reason."""
    rows = []
    for config in configs:
        source = render(config)
        for M, N, K in shapes:
            refused = shape_violations(config, M, N)
            rows.append(VerifyRow(config.name, (M, N, K), SKIPPED, float("inf"), "; ".join(refused)) if refused
                        else check(config, source, (M, N, K), run, seed))
    return rows


def failures(rows: Sequence[VerifyRow]) -> int:
    """Rows that ran and failed (a skipped row did not run)."""
    return sum(r.status not in ("ok", SKIPPED) for r in rows)


def sample_configs(family: Family, limit: int, seed: int = 0) -> list[Config]:
    """Up to `limit` valid configs of a family that, when limit allows, cover every value
    of every parameter that some valid config takes; the rest are picked at random."""
    pool = _pool(family, seed)
    chosen = _cover(pool, limit)
    names = {c.name for c in chosen}
    rest = [c for c in pool if c.name not in names]
    return chosen + rest[: max(0, limit - len(chosen))]


LARGE = 200_000  # combinations above which the pool is a random sample, not the whole space
SAMPLED_POOL = 3000


def _pool(family: Family, seed: int) -> list[Config]:
    """The configs to choose from: all valid ones of a small family, shuffled; for a large
    family, one random valid holder of every (parameter, value) pair plus random valid ones."""
    rng = random.Random(seed)
    if combinations(family) <= LARGE:
        pool = valid_configs(family)
        rng.shuffle(pool)
        return pool
    found: dict[str, Config] = {}
    for p in family.params:
        for v in p.values:
            c = random_valid(family, rng, fixed={p.name: v})
            if c is not None:
                found.setdefault(c.name, c)
    while len(found) < SAMPLED_POOL:
        c = random_valid(family, rng)
        if c is None:
            raise SpaceError(f"{family.name}: no valid config found by random draws")
        found.setdefault(c.name, c)
    return list(found.values())


def possible_pairs(family: Family) -> set:
    """Every (parameter, value) pair that some valid config takes."""
    if combinations(family) <= LARGE:
        return {pair for c in valid_configs(family) for pair in c.params}
    rng = random.Random(0)
    return {(p.name, v) for p in family.params for v in p.values
            if random_valid(family, rng, fixed={p.name: v}, tries=100000) is not None}


def _cover(pool: list[Config], limit: int) -> list[Config]:
    """Greedy cover of the (parameter, value) pairs. Each step serves the pair the fewest
    configs can cover (bx=1024 allows only by=1), with the config covering most new pairs;
    plain most-new-pairs greedy wastes picks and needs more than the minimum."""
    holders: dict = {}
    for c in pool:
        for pair in c.params:
            holders.setdefault(pair, []).append(c)
    uncovered = set(holders)
    chosen: list[Config] = []
    while uncovered and len(chosen) < limit:
        rarest = min(sorted(uncovered, key=str), key=lambda pair: len(holders[pair]))
        best = max(holders[rarest], key=lambda c: len(uncovered.intersection(c.params)))
        chosen.append(best)
        uncovered -= set(best.params)
    return chosen
