"""The recorded shapes nearest a shape: where a search at a new shape starts, and what `best` and
`export` answer for a shape never tuned.

A shape counts as recorded when it has at least one verified (status ok) row of the same backend
on the same GPU model (name or UUID); the distance and the order of ties are space.shapes's rule.
Failures, other GPUs and other backends (an emulator's times say nothing about a GPU's) never
make a shape near.
"""
from __future__ import annotations

import sqlite_utils

from autotune.backends.outcome import OK
from autotune.space import Shape, rank_shapes


def recorded_shapes(db: sqlite_utils.Database, backend: str, gpu: str | None = None) -> list[Shape]:
    """Every shape with a verified row of this backend (and GPU name or UUID, when given)."""
    if "results" not in db.table_names():
        return []
    where, args = "status = ? AND backend = ?", [OK, backend]
    if gpu:
        where += " AND (gpu_uuid = ? OR gpu_name = ?)"
        args += [gpu, gpu]
    rows = db.execute(f"SELECT DISTINCT M, N, K FROM results WHERE {where}", args).fetchall()
    return [(int(M), int(N), int(K)) for M, N, K in rows]


def nearest_shapes(db: sqlite_utils.Database, shape: Shape, backend: str, gpu: str | None = None,
                   count: int | None = None) -> list[Shape]:
    """The recorded shapes other than `shape`, nearest first (space.shapes), at most `count`."""
    ranked = rank_shapes(shape, recorded_shapes(db, backend, gpu))
    return ranked if count is None else ranked[:count]
