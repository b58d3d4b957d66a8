"""Results in SQLite through sqlite-utils: every measurement, every trial, every source.

Tables (documented in db/README.md):
  results   one row per (backend, GPU, shape, kernel source): status, reason, times, provenance
  trials    one row per search trial, pointing at the result it measured or reused
  sources   the CUDA source of every kernel, by hash (what `export` writes back out)
  baselines cuBLAS times per GPU and shape
  claims    measurements in progress, so that concurrent workers never measure a config twice
Each row is written in its own transaction, so a killed search loses at most the trials in
flight; a result row is written only if no row with its key exists (workers may race).
"""
from __future__ import annotations

import datetime as dt
import os
import socket
import sqlite3
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import sqlite_utils

from . import __version__
from .errors import AutotuneError
from .outcome import OK

DEFAULT_DB = Path("db") / "autotune.sqlite"
BUSY_TIMEOUT_MS = 60_000  # workers share the file: wait this long for another's write to end
CLAIM_TTL_S = 3600.0  # a claim by a worker on another host is taken over after this long
# What identifies a measurement: the same source on the same GPU model, shape and backend.
# The GPU model, not its UUID: workers on identical GPUs share their results (rows keep the UUID).
KEY = ("backend", "gpu_name", "M", "N", "K", "kernel", "source_hash")
Key = tuple[str, str, int, int, int, str, str]


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def open_db(path: str | Path) -> sqlite_utils.Database:
    """Open (creating if needed) the results database; a bad path is a one-line error."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite_utils.Database(path)
        db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        db.execute("PRAGMA schema_version").fetchone()  # fails here on a file that is not SQLite
        if db.journal_mode != "wal":
            _patiently(db.enable_wal)  # readers (best, report) never block a running search
        # In WAL mode NORMAL syncs at checkpoints, not at every commit (a search commits a few
        # times per trial): still safe against corruption and against a killed process; a power
        # cut may lose the last rows, which the next search measures again.
        db.execute("PRAGMA synchronous = NORMAL")
    except (OSError, sqlite3.DatabaseError) as exc:
        raise AutotuneError(f"cannot open database {path}: {exc}; pass --db with a writable SQLite file") from None
    try:
        _patiently(lambda: _ensure_schema(db))
    except sqlite3.DatabaseError as exc:  # read-only file, full disk, a corrupt page
        raise AutotuneError(f"cannot write database {path}: {exc}; pass --db with a writable SQLite file") from None
    return db


def _patiently(step, seconds: float = BUSY_TIMEOUT_MS / 1000) -> None:
    """Retry a step that SQLite refused with "locked" without waiting (changing the journal
    mode; two workers creating the tables of a new file at the same moment)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            return step()
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def check_path(path: str | Path) -> None:
    """Refuse a database path that cannot work, creating nothing (so that a command that fails
    later, e.g. with no GPU, leaves no file behind)."""
    path = Path(path)
    if path.exists():
        if not path.is_file() or not os.access(path, os.R_OK | os.W_OK):
            raise AutotuneError(f"database {path} is not a readable and writable file; pass --db with another path")
        with open(path, "rb") as f:
            head = f.read(16)
        if head and head != b"SQLite format 3\x00":
            raise AutotuneError(f"database {path} is not an SQLite file; pass --db with another path")
        return
    parent = next(p for p in path.absolute().parents if p.exists())
    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        raise AutotuneError(f"cannot create database {path}: {parent} is not writable; pass --db with a writable path")


def path_of(db: sqlite_utils.Database) -> str:
    """The file behind a connection: each worker thread opens its own connection to it."""
    return db.execute("PRAGMA database_list").fetchone()[2]


@contextmanager
def immediate(db: sqlite_utils.Database) -> Iterator[None]:
    """A transaction that takes the write lock at once, so that a check and the write that
    depends on it cannot interleave with another worker's (busy_timeout makes others wait)."""
    db.conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        if db.conn.in_transaction:
            db.conn.rollback()
        raise
    if db.conn.in_transaction:
        db.conn.commit()


def _ensure_schema(db: sqlite_utils.Database) -> None:
    if {"results", "trials", "sources", "baselines", "claims"} <= set(db.table_names()):
        return
    with immediate(db):  # several workers may open a new file at the same moment
        _create_tables(db)


def _create_tables(db: sqlite_utils.Database) -> None:
    db["results"].create(
        {"id": int, "kernel": str, "family": str, "backend": str, "M": int, "N": int, "K": int,
         "status": str, "reason": str, "err": float, "time_ms": float, "time_ms_min": float,
         "time_ms_max": float, "reps": int, "tflops": float, "pct_cublas": float, "pct_peak": float,
         "cublas_ms": float, "sm_clock_mhz": int, "num_regs": int, "static_shared": int,
         "source_hash": str, "template_hash": str, "gpu_name": str, "gpu_uuid": str, "arch": str,
         "driver_version": str, "nvrtc_version": str, "tool_version": str, "worker": str, "device": str,
         "created_at": str},
        pk="id", if_not_exists=True,
    )
    db["results"].create_index(["backend", "gpu_uuid", "M", "N", "K", "kernel", "source_hash"], if_not_exists=True)
    db["results"].create_index(list(KEY), if_not_exists=True)
    db["trials"].create({"id": int, "study": str, "number": int, "result_id": int, "cached": int, "worker": str,
                         "created_at": str}, pk="id", foreign_keys=[("result_id", "results", "id")],
                        if_not_exists=True)
    db["sources"].create({"source_hash": str, "kernel": str, "family": str, "source": str},
                         pk="source_hash", if_not_exists=True)
    db["baselines"].create({"id": int, "backend": str, "gpu_uuid": str, "gpu_name": str, "M": int,
                            "N": int, "K": int, "time_ms": float, "time_ms_min": float,
                            "time_ms_max": float, "tflops": float, "sm_clock_mhz": int,
                            "library": str, "created_at": str}, pk="id", if_not_exists=True)
    db.execute("CREATE TABLE IF NOT EXISTS claims (backend TEXT, gpu_name TEXT, M INTEGER, N INTEGER, "
               "K INTEGER, kernel TEXT, source_hash TEXT, owner TEXT, host TEXT, pid INTEGER, expires REAL, "
               "created_at TEXT, PRIMARY KEY (backend, gpu_name, M, N, K, kernel, source_hash))")


def key_of(row: dict[str, Any]) -> Key:
    return tuple(row[k] for k in KEY)  # type: ignore[return-value]


def find_key(db: sqlite_utils.Database, key: Key) -> dict | None:
    where = " AND ".join(f"{k} = ?" for k in KEY)
    rows = list(db.query(f"SELECT * FROM results WHERE {where} ORDER BY id LIMIT 1", list(key)))
    return rows[0] if rows else None


def insert_result(db: sqlite_utils.Database, row: dict[str, Any]) -> int:
    row = {**row, "tool_version": __version__, "created_at": now()}
    return db["results"].insert(row, alter=True).last_pk  # alter: new families add their columns


def record_result(db: sqlite_utils.Database, row: dict[str, Any]) -> tuple[dict, bool]:
    """Insert the row unless one with its key is there already (another worker was faster);
    either way the claim on the key is released. Returns (the stored row, inserted)."""
    key = key_of(row)
    with immediate(db):
        earlier = find_key(db, key)
        db.execute(f"DELETE FROM claims WHERE {' AND '.join(f'{k} = ?' for k in KEY)}", list(key))
        if earlier:
            return earlier, False
        row = {**row, "id": insert_result(db, row)}  # last: sqlite-utils 3 commits on insert
    return row, True


# --------------------------------------------------------------------------- claims

@dataclass(frozen=True)
class Owner:
    """Who holds a claim: the search process (not its kernel worker, which may be replaced)."""

    worker: str
    host: str = field(default_factory=socket.gethostname)
    pid: int = field(default_factory=os.getpid)


MINE, DONE, TAKEN = "mine", "done", "taken"


def claim(db: sqlite_utils.Database, key: Key, owner: Owner, ttl_s: float = CLAIM_TTL_S) -> str:
    """MINE: measure it; DONE: a row exists (reuse it); TAKEN: a live worker is measuring it.
    A claim left by a killed search (same host, dead pid) or an expired one is taken over."""
    where = " AND ".join(f"{k} = ?" for k in KEY)
    with immediate(db):
        if find_key(db, key):
            return DONE
        held = db.execute(f"SELECT host, pid, expires FROM claims WHERE {where}", list(key)).fetchone()
        if held and not _stale(*held):
            return TAKEN
        db.execute(f"INSERT OR REPLACE INTO claims ({', '.join(KEY)}, owner, host, pid, expires, created_at) "
                   f"VALUES ({', '.join('?' * len(KEY))}, ?, ?, ?, ?, ?)",
                   [*key, owner.worker, owner.host, owner.pid, time.time() + ttl_s, now()])
    return MINE


def release(db: sqlite_utils.Database, key: Key, owner: Owner) -> None:
    where = " AND ".join(f"{k} = ?" for k in KEY)
    with immediate(db):
        db.execute(f"DELETE FROM claims WHERE {where} AND host = ? AND pid = ?", [*key, owner.host, owner.pid])


def _stale(host: str, pid: int, expires: float) -> bool:
    if expires < time.time():
        return True
    return host == socket.gethostname() and pid != os.getpid() and not alive(pid)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    return True


def copy_result(db: sqlite_utils.Database, row: dict[str, Any], source: str) -> dict[str, Any]:
    """Another host's finished row (from the ledger) into this database, with its own worker,
    device and date kept; its source too, so that export works here. Returns the local row."""
    insert_source(db, row["source_hash"], row["kernel"], row["family"], source)
    copy = {k: v for k, v in row.items() if k != "id"}
    with immediate(db):
        found = find_key(db, tuple(row[k] for k in KEY))  # a copy made meanwhile by another thread
        if found:
            return found
        copy["id"] = db["results"].insert(copy, alter=True).last_pk
    return copy


def insert_source(db: sqlite_utils.Database, source_hash: str, kernel: str, family: str, source: str) -> None:
    with immediate(db):  # each write takes the lock first: a read-then-write could fail at once under WAL
        db["sources"].insert({"source_hash": source_hash, "kernel": kernel, "family": family, "source": source},
                             ignore=True)


def insert_trial(db: sqlite_utils.Database, study: str, number: int, result_id: int, cached: bool,
                 worker: str = "") -> None:
    with immediate(db):
        db["trials"].insert({"study": study, "number": number, "result_id": result_id, "cached": int(cached),
                             "worker": worker, "created_at": now()}, alter=True)


def insert_baseline(db: sqlite_utils.Database, row: dict[str, Any]) -> None:
    with immediate(db):
        db["baselines"].insert({**row, "created_at": now()})


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
