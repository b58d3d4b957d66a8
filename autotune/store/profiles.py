"""Profiles: what Nsight Compute measured for one kernel at one shape on one GPU, beside what the
model predicted (`autotune profile`). The table is made by the first profile written, never by a
command that only reads, so databases written before it keep working unchanged."""
from __future__ import annotations

from typing import Any

import sqlite_utils

from autotune.store.db import immediate, now

TABLE = "profiles"
# What identifies a profile; every other column is a measured or modelled number (REAL), so a
# first row with a metric missing (NULL) does not give its column a type the next row's number would lose.
IDENTITY = {"id": int, "result_id": int, "kernel": str, "family": str, "source_hash": str, "M": int, "N": int,
            "K": int, "gpu_name": str, "gpu_uuid": str, "arch": str, "model_binding": str, "model_device": str,
            "created_at": str}


def insert_profile(db: sqlite_utils.Database, row: dict[str, Any]) -> dict[str, Any]:
    """Store one profile: its identity, the measured and the modelled numbers. Returns it as stored, with its id."""
    row = {**row, "created_at": now()}
    with immediate(db):
        table = db.table(TABLE)
        table.create(IDENTITY, pk="id", if_not_exists=True)
        have = set(table.columns_dict)
        for name in [k for k in row if k not in have]:  # a new metric adds its column, typed REAL even when it is NULL here
            table.add_column(name, str if isinstance(row[name], str) else float)
        row["id"] = table.insert(row).last_pk
    return row


def profiles(db: sqlite_utils.Database, shape: tuple[int, int, int] | None = None,
             gpu: str | None = None) -> list[dict[str, Any]]:
    """The stored profiles, oldest first, of one shape and GPU (name or UUID) if given; none in a
    database without the table."""
    if TABLE not in db.table_names():
        return []
    where, args = ["1"], list[Any]()
    if shape:
        where.append("M = ? AND N = ? AND K = ?")
        args += list(shape)
    if gpu:
        where.append("(gpu_uuid = ? OR gpu_name = ?)")
        args += [gpu, gpu]
    return list(db.query(f"SELECT * FROM {TABLE} WHERE {' AND '.join(where)} ORDER BY id", args))
