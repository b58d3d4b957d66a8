"""Results in SQLite through sqlite-utils: every measurement, every trial, every source.

Tables (documented in db/README.md):
  results   one row per (backend, GPU, shape, kernel source): status, reason, times, provenance
  trials    one row per search trial, pointing at the result it measured or reused
  sources   the CUDA source of every kernel, by hash (what `export` writes back out)
  baselines cuBLAS times per GPU and shape
Each insert is its own transaction, so a killed search loses at most the trial in flight.
"""
from __future__ import annotations

import datetime as dt
import sqlite3
from pathlib import Path
from typing import Any, Iterator

import sqlite_utils

from . import __version__
from .errors import AutotuneError
from .outcome import OK

DEFAULT_DB = Path("db") / "autotune.sqlite"


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def open_db(path: str | Path) -> sqlite_utils.Database:
    """Open (creating if needed) the results database; a bad path is a one-line error."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite_utils.Database(path)
        db.execute("PRAGMA schema_version").fetchone()  # fails here on a file that is not SQLite
        if db.journal_mode != "wal":
            db.enable_wal()  # readers (best, report) never block a running search
    except (OSError, sqlite3.DatabaseError) as exc:
        raise AutotuneError(f"cannot open database {path}: {exc}; pass --db with a writable SQLite file") from None
    _ensure_schema(db)
    return db


def _ensure_schema(db: sqlite_utils.Database) -> None:
    if "results" not in db.table_names():
        db["results"].create(
            {"id": int, "kernel": str, "family": str, "backend": str, "M": int, "N": int, "K": int,
             "status": str, "reason": str, "err": float, "time_ms": float, "time_ms_min": float,
             "time_ms_max": float, "reps": int, "tflops": float, "pct_cublas": float, "pct_peak": float,
             "cublas_ms": float, "sm_clock_mhz": int, "num_regs": int, "static_shared": int,
             "source_hash": str, "template_hash": str, "gpu_name": str, "gpu_uuid": str, "arch": str,
             "driver_version": str, "nvrtc_version": str, "tool_version": str, "created_at": str},
            pk="id",
        )
        db["results"].create_index(["backend", "gpu_uuid", "M", "N", "K", "kernel", "source_hash"])
    if "trials" not in db.table_names():
        db["trials"].create({"id": int, "study": str, "number": int, "result_id": int, "cached": int,
                             "created_at": str}, pk="id", foreign_keys=[("result_id", "results", "id")])
    if "sources" not in db.table_names():
        db["sources"].create({"source_hash": str, "kernel": str, "family": str, "source": str},
                             pk="source_hash")
    if "baselines" not in db.table_names():
        db["baselines"].create({"id": int, "backend": str, "gpu_uuid": str, "gpu_name": str, "M": int,
                                "N": int, "K": int, "time_ms": float, "time_ms_min": float,
                                "time_ms_max": float, "tflops": float, "sm_clock_mhz": int,
                                "library": str, "created_at": str}, pk="id")


def insert_result(db: sqlite_utils.Database, row: dict[str, Any]) -> int:
    row = {**row, "tool_version": __version__, "created_at": now()}
    return db["results"].insert(row, alter=True).last_pk  # alter: new families add their columns


def insert_source(db: sqlite_utils.Database, source_hash: str, kernel: str, family: str, source: str) -> None:
    db["sources"].insert({"source_hash": source_hash, "kernel": kernel, "family": family, "source": source},
                         ignore=True)


def insert_trial(db: sqlite_utils.Database, study: str, number: int, result_id: int, cached: bool) -> None:
    db["trials"].insert({"study": study, "number": number, "result_id": result_id, "cached": int(cached),
                         "created_at": now()})


def insert_baseline(db: sqlite_utils.Database, row: dict[str, Any]) -> None:
    db["baselines"].insert({**row, "created_at": now()})


def find_result(db: sqlite_utils.Database, backend: str, gpu_uuid: str, shape: tuple[int, int, int],
                kernel: str, source_hash: str) -> dict | None:
    """The earlier measurement of this exact source on this GPU and shape, if any."""
    sql = ("SELECT * FROM results WHERE backend = ? AND gpu_uuid = ? AND M = ? AND N = ? AND K = ? "
           "AND kernel = ? AND source_hash = ? ORDER BY id DESC LIMIT 1")
    rows = list(db.query(sql, [backend, gpu_uuid, *shape, kernel, source_hash]))
    return rows[0] if rows else None


def results(db: sqlite_utils.Database, shape: tuple[int, int, int], backend: str = "cuda",
            gpu: str | None = None, status: str | None = None) -> Iterator[dict]:
    where = ["backend = ?", "M = ?", "N = ?", "K = ?"]
    args: list[Any] = [backend, *shape]
    if gpu:
        where.append("(gpu_uuid = ? OR gpu_name = ?)")
        args += [gpu, gpu]
    if status:
        where.append("status = ?")
        args.append(status)
    return db.query(f"SELECT * FROM results WHERE {' AND '.join(where)} ORDER BY id", args)


def best(db: sqlite_utils.Database, shape: tuple[int, int, int], backend: str = "cuda",
         gpu: str | None = None, family: str | None = None) -> dict | None:
    """The fastest verified result: status ok only, so a wrong kernel can never be best."""
    rows = [r for r in results(db, shape, backend, gpu, OK) if family in (None, r["family"])]
    return min(rows, key=lambda r: r["time_ms"]) if rows else None


def result_by_id(db: sqlite_utils.Database, result_id: int) -> dict:
    try:
        return db["results"].get(result_id)
    except sqlite_utils.db.NotFoundError:
        raise AutotuneError(f"no result with id {result_id} in the database; list them with "
                            f"`sqlite-utils query DB 'select id, kernel, status from results'`") from None


def source(db: sqlite_utils.Database, source_hash: str) -> str | None:
    rows = list(db.query("SELECT source FROM sources WHERE source_hash = ?", [source_hash]))
    return rows[0]["source"] if rows else None
