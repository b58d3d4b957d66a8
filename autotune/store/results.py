"""Rows of the results database: every measurement, every trial, every source, every baseline.

A result row is written only if no row with its key exists (workers may race), in the same
transaction that drops its claim. Queries that pick a best row look at status ok only, so a
wrong kernel can never be best.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator

import sqlite_utils

from autotune import __version__
from autotune.backends.outcome import OK
from autotune.errors import AutotuneError
from autotune.families import families_for
from autotune.store.db import KEY, immediate, key_where, now

Key = tuple[str, str, int, int, int, int, str, str]


def key_of(row: dict[str, Any]) -> Key:
    return tuple(row.get(k) or 1 if k == "batch" else row[k] for k in KEY)  # type: ignore[return-value]


@dataclass(frozen=True)
class Redo:
    """Rows a search measures again instead of reusing them (`--remeasure`): those of these statuses
    written before the search began (`since`, a now() string; `--remeasure failed`), and those that
    `stale` finds measured from a source other than the one their config renders today (`--remeasure
    stale`, after a template changed). What the search writes itself is reused as usual, so a kernel
    that fails again is not measured over and over."""

    statuses: tuple[str, ...]
    since: str
    stale: Callable[[dict[str, Any]], bool] | None = None

    def redoes(self, row: dict[str, Any]) -> bool:
        failed = row["status"] in self.statuses and (row.get("created_at") or "") < self.since
        return failed or (self.stale is not None and self.stale(row))

    @classmethod
    def every_row_of(cls, db: sqlite_utils.Database) -> Redo:
        """Every row already in `db` (`autotune measure --again`); told by id, as now()'s whole seconds would
        take a row written in this very second for one written after."""
        last = next(db.query("SELECT COALESCE(MAX(id), 0) AS id FROM results"))["id"]
        return cls((), "", stale=lambda row: row["id"] <= last)


def find_key(db: sqlite_utils.Database, key: Key, redo: Redo | None = None) -> dict | None:
    """The newest row of a key (a measurement made again sits beside the old one); None where
    there is none, or where `redo` says to measure it again."""
    rows = list(db.query(f"SELECT * FROM results WHERE {key_where()} ORDER BY id DESC LIMIT 1", list(key)))
    return None if not rows or (redo and redo.redoes(rows[0])) else rows[0]


def insert_result(db: sqlite_utils.Database, row: dict[str, Any]) -> int:
    row = {"tool_version": __version__, "created_at": now(), **row}
    pk = db.table("results").insert(row, alter=True).last_pk  # alter: new families add their columns
    assert pk is not None
    return int(pk)


def record_result(db: sqlite_utils.Database, row: dict[str, Any], redo: Redo | None = None) -> tuple[dict, bool]:
    """Insert the row unless one with its key is there already (another worker was faster; a row
    `redo` measures again does not count); either way the claim on the key is released.
    Returns (the stored row, inserted)."""
    key = key_of(row)
    with immediate(db):
        earlier = find_key(db, key, redo)
        db.execute(f"DELETE FROM claims WHERE {key_where()}", list(key))
        if earlier:
            return earlier, False
        # the row as stored, its date too: a claim publishes it, and --remeasure reads the date
        row = {**row, "tool_version": __version__, "created_at": now()}
        row["id"] = insert_result(db, row)  # last: sqlite-utils 3 commits on insert
    return row, True


def copy_result(db: sqlite_utils.Database, row: dict[str, Any], source: str,
                redo: Redo | None = None) -> dict[str, Any]:
    """Another host's finished row (from the ledger) into this database, with its own worker,
    device and date kept; its source too, so that export works here. Returns the local row."""
    insert_source(db, row["source_hash"], row["kernel"], row["family"], source)
    copy = {k: v for k, v in row.items() if k != "id"}
    with immediate(db):
        found = find_key(db, key_of(row), redo)  # a copy made meanwhile by another thread
        if found:
            return found
        copy["id"] = db.table("results").insert(copy, alter=True).last_pk
    return copy


def insert_source(db: sqlite_utils.Database, source_hash: str, kernel: str, family: str, source: str) -> None:
    with immediate(db):  # each write takes the lock first: a read-then-write could fail at once under WAL
        db.table("sources").insert({"source_hash": source_hash, "kernel": kernel, "family": family, "source": source},
                             ignore=True)


def insert_trial(db: sqlite_utils.Database, study: str, number: int, result_id: int, cached: bool,
                 worker: str = "") -> None:
    with immediate(db):
        db.table("trials").insert({"study": study, "number": number, "result_id": result_id, "cached": int(cached),
                             "worker": worker, "created_at": now()}, alter=True)


def insert_baseline(db: sqlite_utils.Database, row: dict[str, Any]) -> None:
    with immediate(db):
        db.table("baselines").insert({**row, "created_at": now()}, alter=True)  # alter: a file from before `watts`


def results(db: sqlite_utils.Database, shape: tuple[int, int, int], backend: str = "cuda",
            gpu: str | None = None, status: str | None = None, batch: int | None = None) -> Iterator[dict]:
    """Rows at a shape; batch: of that batch count only (None: any)."""
    where = ["backend = ?", "M = ?", "N = ?", "K = ?"]
    args: list[Any] = [backend, *shape]
    if batch is not None:
        where.append("COALESCE(batch, 1) = ?")  # a row from before the column: one batch
        args.append(batch)
    if gpu:
        where.append("(gpu_uuid = ? OR gpu_name = ?)")
        args += [gpu, gpu]
    if status:
        where.append("status = ?")
        args.append(status)
    return db.query(f"SELECT * FROM results WHERE {' AND '.join(where)} ORDER BY id", args)


def faster_than_library(db: sqlite_utils.Database, backend: str, gpu: str, slack_ms: float = 0.0) -> Iterator[dict]:
    """The verified rows whose kernel was faster than cuBLAS timed beside it, or slower by less than slack_ms."""
    return db.query("SELECT * FROM results WHERE backend = ? AND (gpu_uuid = ? OR gpu_name = ?) AND status = ? "
                    "AND time_ms < cublas_ms + ?", [backend, gpu, gpu, OK, slack_ms])


def admitted_families(precision: str | None) -> set[str] | None:
    """The families whose rows the contract `precision` admits (fp32: no tensor-core family); None: any."""
    return set(families_for(precision)) if precision else None


def best(db: sqlite_utils.Database, shape: tuple[int, int, int], backend: str = "cuda",
         gpu: str | None = None, family: str | None = None, precision: str | None = None) -> dict | None:
    """The fastest verified result: status ok only, so a wrong kernel can never be best. precision:
    only rows of the families that contract admits (fp32: no tensor-core rows), None: any."""
    admitted = admitted_families(precision)
    rows = [r for r in results(db, shape, backend, gpu, OK)
            if family in (None, r["family"]) and (admitted is None or r["family"] in admitted)]
    return min(rows, key=lambda r: r["time_ms"]) if rows else None


SQLITE_LOWEST, SQLITE_HIGHEST = -2 ** 63, 2 ** 63 - 1  # an id past them is no row's: SQLite raises OverflowError


def result_by_id(db: sqlite_utils.Database, result_id: int) -> dict:
    try:
        if not SQLITE_LOWEST <= result_id <= SQLITE_HIGHEST:
            raise sqlite_utils.db.NotFoundError
        return db.table("results").get(result_id)
    except sqlite_utils.db.NotFoundError:
        raise AutotuneError(f"no result with id {result_id} in the database; list them with "
                            f"`sqlite-utils query DB 'select id, kernel, status from results'`") from None


def source(db: sqlite_utils.Database, source_hash: str) -> str | None:
    """The stored source, or None (a dataset recorded without a sources table has none)."""
    if "sources" not in db.table_names():
        return None
    rows = list(db.query("SELECT source FROM sources WHERE source_hash = ?", [source_hash]))
    return rows[0]["source"] if rows else None


def gpus(db: sqlite_utils.Database) -> list[tuple[str, str]]:
    """Every (gpu_name, gpu_uuid) that has a result, whatever the backend and shape."""
    rows = db.execute("SELECT DISTINCT gpu_name, gpu_uuid FROM results ORDER BY gpu_name, gpu_uuid").fetchall()
    return [(name or "", uuid or "") for name, uuid in rows]


def backends_with_ok(db: sqlite_utils.Database, shape: tuple[int, int, int]) -> list[str]:
    """The backends that have a verified result at this shape."""
    rows = db.execute("SELECT DISTINCT backend FROM results WHERE status = ? AND M = ? AND N = ? AND K = ? "
                      "ORDER BY backend", [OK, *shape]).fetchall()
    return [r[0] for r in rows]


def baselines(db: sqlite_utils.Database, shape: tuple[int, int, int], gpu: str | None = None) -> list[dict]:
    """The cuBLAS baselines recorded for a shape (one per search that timed it); none in a dataset
    without the table."""
    if "baselines" not in db.table_names():
        return []
    where, args = "M = ? AND N = ? AND K = ?", list[Any](shape)
    if gpu:
        where += " AND (gpu_uuid = ? OR gpu_name = ?)"
        args += [gpu, gpu]
    return list(db.query(f"SELECT * FROM baselines WHERE {where} ORDER BY id", args))


def trial_results(db: sqlite_utils.Database, shape: tuple[int, int, int], gpu: str | None = None) -> list[dict]:
    """Each trial at a shape with its result's status and TFLOP/s, by study and trial number."""
    if "trials" not in db.table_names():
        return []
    sql = ("SELECT t.study, t.number, r.status, r.tflops FROM trials t JOIN results r ON r.id = t.result_id "
           "WHERE r.M = ? AND r.N = ? AND r.K = ?" + (" AND (r.gpu_uuid = ? OR r.gpu_name = ?)" if gpu else "")
           + " ORDER BY t.study, t.number")
    return list(db.query(sql, [*shape, *([gpu, gpu] if gpu else [])]))
