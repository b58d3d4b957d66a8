"""Planning a trial: is the config refused, answered by a row already recorded, or to measure?

The order matters: constraints before rendering, the database before the GPU. Planning writes
nothing, so the compile-ahead pipeline (search.pipeline) can plan the next trials while the GPU
measures, and search.measure records what the plan decided.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import sqlite_utils

from autotune import store
from autotune.backends.base import Backend
from autotune.codegen.render import render, sha256
from autotune.errors import SpaceError
from autotune.families import config_of_row
from autotune.space import Config, Family, Limits, shape_violations, takes_blas, violations


@dataclass(frozen=True)
class Plan:
    config: Config
    refused: tuple[str, ...] = ()  # the reasons a constraint gives; empty: it may run
    source: str = ""  # the kernel's CUDA source (rendered only when not refused)
    key: store.Key | None = None  # the measurement's identity in the results table
    reused: dict | None = None  # the row recorded earlier for that key
    redo: store.Redo | None = None  # recorded rows to measure again rather than reuse (--remeasure)

    @property
    def to_measure(self) -> bool:
        return not self.refused and self.reused is None


def plan(db: sqlite_utils.Database, backend: Backend, config: Config, limits: Limits,
         redo: store.Redo | None = None) -> Plan:
    bad = refusals(backend, config, limits)
    if bad:
        return Plan(config, refused=tuple(bad))
    source = render(config, limits)
    key = measurement_key(backend, config, sha256(source))
    return Plan(config, source=source, key=key, reused=store.find_key(db, key, redo), redo=redo)


def refusals(backend: Backend, config: Config, limits: Limits) -> list[str]:
    """Why this config is refused at the backend's shape (empty: it is not)."""
    M, N, _ = backend.shape
    batched = [] if backend.batch == 1 or takes_blas(config.values) else [
        f"a batch of {backend.batch} needs a BLAS=1 kernel (the batch is its grid's z)"]
    return violations(config, limits) + shape_violations(config, M, N, limits) + batched


def measurement_key(backend: Backend, config: Config, source_hash: str) -> store.Key:
    M, N, K = backend.shape
    return (backend.name, backend.provenance["gpu_name"], M, N, K, backend.batch, config.name, source_hash)


def stale_source(families: list[Family], limits: Limits) -> Callable[[dict[str, Any]], bool]:
    """`--remeasure stale`: is a row's source other than what its config renders today? (A template
    changed since: the row measured another kernel under the same name.) Rows without a source
    (refused), of families not searched or of configs outside today's space are not stale: there is
    nothing of today's to measure in their place."""
    searched = {f.name for f in families}
    today: dict[str, str] = {}  # kernel name -> the hash of today's source

    def stale(row: dict[str, Any]) -> bool:
        if not row.get("source_hash") or row.get("family") not in searched:
            return False
        if row["kernel"] not in today:
            try:
                today[row["kernel"]] = sha256(render(config_of_row(row), limits))
            except SpaceError:
                today[row["kernel"]] = row["source_hash"]
        return row["source_hash"] != today[row["kernel"]]

    return stale
