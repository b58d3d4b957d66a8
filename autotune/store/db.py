"""The results database file: opening it for a search (created, WAL, the schema) or for a
command that only reads (never created, never changed), and its tables (db/README.md).

Each row is written in its own transaction, so a killed search loses at most the trials in
flight. Commands that only read open the file read-only, so a committed dataset stays
byte-identical and a mistyped path creates nothing.
"""
from __future__ import annotations

import datetime as dt
import os
import sqlite3
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import sqlite_utils

from autotune.errors import AutotuneError
from autotune.packed import unpacked

DEFAULT_DB = Path("db") / "autotune.sqlite"
# The tuned databases the package ships (scripts/ship_database.py makes them), read by load() after the
# user's own: each holds, per GPU model, shape and layout, the fastest kernel that beat cuBLAS there.
TUNED = Path(__file__).resolve().parent / "tuned"


def default_path() -> str:
    """AUTOTUNE_DB (an empty value counts as unset), else db/autotune.sqlite in the working folder: the database
    of every command and API call not given one."""
    return os.environ.get("AUTOTUNE_DB") or str(DEFAULT_DB)


def shipped_databases() -> list[str]:
    return sorted(str(p) for p in TUNED.glob("*.sqlite"))
BUSY_TIMEOUT_MS = 60_000  # workers share the file: wait this long for another's write to end
TABLES = {"results", "trials", "sources", "baselines", "claims"}
# What identifies a measurement: the same source on the same GPU model, shape, batch count and
# backend. The GPU model, not its UUID: workers on identical GPUs share their results (rows keep
# the UUID).
KEY = ("backend", "gpu_name", "M", "N", "K", "batch", "kernel", "source_hash")


def key_where() -> str:
    """KEY's columns equal to parameters; a row written before the batch column (NULL) is one batch."""
    return " AND ".join("COALESCE(batch, 1) = ?" if k == "batch" else f"{k} = ?" for k in KEY)


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def check_writable(path: str | Path) -> None:
    """The databases the package ships are only read (load() reads them by itself): a search, a measurement or
    a first-use job that wrote into one would change the package for every later user of the install. A gzip'd
    database is only read too (autotune.packed): rows written to its unpacked copy would be lost."""
    if TUNED.resolve() in Path(path).resolve().parents:
        raise AutotuneError(f"database {path} is a database the package ships, which is only read; pass --db (db=, "
                            f"or AUTOTUNE_DB) with a database of your own")
    if Path(path).suffix == ".gz":
        raise AutotuneError(f"database {path} is gzip'd, which is only read; gunzip it and pass --db with the plain "
                            f"file to write to")


def open_db(path: str | Path) -> sqlite_utils.Database:
    """Open (creating if needed) the results database; a bad path is a one-line error."""
    path = Path(path)
    check_writable(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite_utils.Database(path)
        db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        db.execute("PRAGMA schema_version").fetchone()  # fails here on a file that is not SQLite
        existing = set(db.table_names())
        if existing:  # another tool's file is refused before anything is changed in it
            check_tables(path, existing, db.conn)
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


def as_path(path: str | Path) -> Path:
    """A database path as given from Python too, where anything may be passed: one line for what is no path."""
    if not isinstance(path, (str, os.PathLike)) or not str(path):
        raise AutotuneError(f"db={path!r} is not a path; pass a file name (str or pathlib.Path)")
    return Path(path)


def check_path(path: str | Path) -> None:
    """Refuse a database path that cannot work, creating nothing (so that a command that fails
    later, e.g. with no GPU, leaves no file behind)."""
    path = as_path(path)
    check_writable(path)
    if path.exists():
        if not path.is_file() or not os.access(path, os.R_OK | os.W_OK):
            raise AutotuneError(f"database {path} is not a readable and writable file; pass --db with another path")
        if sqlite_tables(path) is None:
            raise AutotuneError(f"database {path} is not an SQLite file; pass --db with another path")
        if not os.access(path.resolve().parent, os.W_OK | os.X_OK):  # WAL writes a -wal and -shm beside the file
            raise AutotuneError(f"database {path} lies in a folder this user cannot write, where SQLite keeps its "
                                f"-wal and -shm files beside it; copy it to a writable folder and pass --db with that")
        return
    parent = next(p for p in path.absolute().parents if p.exists())
    if not parent.is_dir():
        raise AutotuneError(f"cannot create database {path}: {parent} is a file, not a folder; pass --db with another "
                            f"path")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise AutotuneError(f"cannot create database {path}: {parent} is not writable; pass --db with a writable path")


def sqlite_tables(path: Path) -> set[str] | None:
    """The tables of an existing file, None where it is not SQLite (an empty file is an empty database).

    Read through an immutable SQLite connection, which writes nothing and takes no lock, and never with open():
    closing any descriptor of the file drops every POSIX lock this process holds on it, its own SQLite
    connections' included (SQLite defers the close of its own descriptors for that reason). A suite checks its
    database before each shape while its connections are open; with the header read by open(), a suite and two
    searches on one new database left it corrupt in 3 runs of 10 (emulator, a fresh cache each run)."""
    for attempt in range(3):
        try:
            conn = sqlite3.connect(f"{path.absolute().as_uri()}?immutable=1", uri=True)
            try:
                return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            finally:
                conn.close()
        except sqlite3.DatabaseError as exc:
            if getattr(exc, "sqlite_errorname", "") == "SQLITE_NOTADB" or "not a database" in str(exc):
                return None
            time.sleep(0.01)  # a page read while another process checkpoints (immutable takes no lock): again
    return set()  # SQLite all the same; what it holds, the open that follows will say


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
    if TABLES <= set(db.table_names()) and all("batch" in db.table(t).columns_dict for t in ("results", "claims")):
        return
    with immediate(db):  # several workers may open a new file at the same moment
        _create_tables(db)
        for table in ("results", "claims"):  # a file from before batches: its rows read as one batch
            if "batch" not in db.table(table).columns_dict:
                db.execute(f"ALTER TABLE {table} ADD COLUMN batch INTEGER")
        db.table("results").create_index(list(KEY), if_not_exists=True)


def _create_tables(db: sqlite_utils.Database) -> None:
    db.table("results").create(
        {"id": int, "kernel": str, "family": str, "backend": str, "M": int, "N": int, "K": int,
         "batch": int, "status": str, "reason": str, "precision": str, "err": float, "err_ref": float, "time_ms": float,
         "time_ms_min": float, "time_ms_max": float, "reps": int, "tflops": float, "pct_cublas": float,
         "pct_peak": float, "cublas_ms": float, "cublas_layout": str, "sm_clock_mhz": int,
         "watts": float, "gflops_per_watt": float, "cublas_watts": float, "cublas_gflops_per_watt": float,
         "num_regs": int, "static_shared": int,
         "source_hash": str, "template_hash": str, "gpu_name": str, "gpu_uuid": str, "arch": str,
         "driver_version": str, "nvrtc_version": str, "tool_version": str, "worker": str, "device": str,
         "created_at": str},
        pk="id", if_not_exists=True,
    )
    db.table("results").create_index(["backend", "gpu_uuid", "M", "N", "K", "kernel", "source_hash"], if_not_exists=True)
    db.table("trials").create({"id": int, "study": str, "number": int, "result_id": int, "cached": int, "worker": str,
                         "created_at": str}, pk="id", foreign_keys=[("result_id", "results", "id")],
                        if_not_exists=True)
    db.table("sources").create({"source_hash": str, "kernel": str, "family": str, "source": str},
                         pk="source_hash", if_not_exists=True)
    db.table("baselines").create({"id": int, "backend": str, "gpu_uuid": str, "gpu_name": str, "M": int,
                            "N": int, "K": int, "time_ms": float, "time_ms_min": float,
                            "time_ms_max": float, "tflops": float, "sm_clock_mhz": int,
                            "watts": float, "library": str, "created_at": str}, pk="id", if_not_exists=True)
    db.execute("CREATE TABLE IF NOT EXISTS claims (backend TEXT, gpu_name TEXT, M INTEGER, N INTEGER, "
               "K INTEGER, batch INTEGER, kernel TEXT, source_hash TEXT, owner TEXT, host TEXT, pid INTEGER, "
               f"expires REAL, created_at TEXT, PRIMARY KEY ({', '.join(KEY)}))")




def open_readonly(path: str | Path) -> sqlite_utils.Database:
    """Open an existing results database for reading only: nothing is created, converted or
    written, so `best` on a committed dataset leaves it byte-identical."""
    path = as_path(path)
    if path.is_dir():
        raise AutotuneError(f"database {path} is a folder; pass --db (or set AUTOTUNE_DB) with the results file "
                            f"a search wrote")
    if path.exists() and not path.is_file():  # a device, a pipe
        raise AutotuneError(f"database {path} is not a regular file; pass --db (or set AUTOTUNE_DB) with the results "
                            f"file a search wrote")
    if not path.is_file():
        raise AutotuneError(f"database {path} does not exist; pass --db (or set AUTOTUNE_DB) with the file "
                            f"a search wrote")
    path = unpacked(path)  # a gzip'd database is read from its plain copy
    try:
        conn = sqlite3.connect(f"{path.absolute().as_uri()}?{_read_mode(path)}", uri=True, check_same_thread=False)
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except (OSError, sqlite3.DatabaseError) as exc:  # unreadable, not SQLite, corrupt
        raise AutotuneError(f"cannot open database {path}: {exc}; pass --db with a results database") from None
    check_tables(path, tables, conn)
    return sqlite_utils.Database(conn)


def _read_mode(path: Path) -> str:
    """mode=ro alone still makes a WAL file's -shm beside it (and fails in a folder it cannot write: the
    shipped databases may lie in one). A file with no -wal or -journal beside it is not being written (every
    writer here puts it in WAL mode, which keeps a -wal while it is open): read it as immutable, which touches
    nothing. With one (a search is writing, or was killed), read it as SQLite shares it. Only names are
    looked at: the file itself is not opened here (sqlite_tables says why)."""
    busy = any(Path(f"{path}{suffix}").exists() for suffix in ("-wal", "-journal"))
    return "mode=ro" if busy else "immutable=1"


def check_tables(path: str | Path, tables: set[str], conn: sqlite3.Connection) -> None:
    """Refuse a database some other tool wrote, with one line, before a query fails on it."""
    if "results" not in tables:
        raise AutotuneError(f"{path} has no results table: it is not an autotune database; pass --db with one")
    columns = {r[1] for r in conn.execute("PRAGMA table_info(results)")}
    missing = sorted({"kernel", "family", "status", "M", "N", "K"} - columns)
    if missing:
        raise AutotuneError(f"{path} has a results table without {', '.join(missing)}: it is not an autotune "
                            f"database; pass --db with one")
