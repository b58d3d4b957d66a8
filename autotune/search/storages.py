"""What --storage may name, checked before Optuna or SQLAlchemy opens it: both write into
whatever they are given (a journal appends its first record to any file, an SQLite URL creates
Optuna's tables in any database), so a file the tool cannot recognise as a study of its own is
refused and left as it was.

The rule: a URL is `scheme://...` of a database Optuna keeps studies in (postgresql, mysql,
mariadb, sqlite; a driver may follow a `+`); anything else is a journal file path, which has no
`:` (a `:` is a URL mistyped, not a file name anyone means). An existing file must be empty or a
study: an SQLite file with no tables or with Optuna's (or this tool's claims table), a journal whose
first line is an Optuna record.
"""
from __future__ import annotations

import json
from pathlib import Path

from autotune.errors import AutotuneError
from autotune.store.claims import SERVER_TABLE
from autotune.store.db import sqlite_tables

SCHEMES = ("postgresql", "mysql", "mariadb", "sqlite")
OPTUNA_TABLES = {"studies", "trials", "version_info"}
HOW = ("give postgresql://USER@HOST/DB (several hosts), sqlite:///PATH or a journal file path (one host), "
       "or leave --storage out for an in-memory study")


def check_storage(url: str) -> None:
    """Refuse, in one line, a --storage that is neither a known URL nor a journal path, or names
    an existing file that is not a study."""
    if not url.strip():
        raise AutotuneError(f"--storage is empty: {HOW}")
    scheme, sep, _ = url.partition("://")
    if sep:
        if scheme.split("+")[0].lower() not in SCHEMES:
            raise AutotuneError(f"--storage {scheme}://... is not a database Optuna keeps studies in "
                                f"({', '.join(SCHEMES)}): {HOW}")
        if scheme.split("+")[0].lower() == "sqlite":
            _check_sqlite(url)
        return
    if ":" in url:
        raise AutotuneError(f"--storage {url!r} is neither a URL (scheme://...) nor a journal file path (a path "
                            f"without ':'): {HOW}")
    _check_journal(Path(url))


def _existing(path: Path) -> bool:
    """Whether there is a file with something in it to protect (a folder is refused)."""
    if path.is_dir():
        raise AutotuneError(f"--storage {path} is a folder; pass a file path (it is created if needed)")
    return path.is_file() and path.stat().st_size > 0


def _check_journal(path: Path) -> None:
    if not _existing(path):
        return
    with open(path, "rb") as f:
        first = f.readline(1 << 20)
    try:
        record = json.loads(first)
    except ValueError:
        record = None
    if not (isinstance(record, dict) and "op_code" in record):
        raise AutotuneError(f"--storage {path} is not an Optuna journal (its first line is no journal record); "
                            f"it was left as it is: pass a new path for a new study")


def _check_sqlite(url: str) -> None:
    from sqlalchemy.engine import make_url

    try:
        database = make_url(url).database
    except Exception:
        raise AutotuneError(f"--storage is not a valid sqlite URL: {HOW}") from None
    if not database or database == ":memory:" or not _existing(Path(database)):
        return
    path = Path(database)
    # not open(): a suite's storage may be open in this process (store.sqlite_tables); an empty file is the user's
    tables = sqlite_tables(path) if path.stat().st_size else None
    if tables is None:
        raise AutotuneError(f"--storage {url} names {path}, which is not an SQLite file; it was left as it is: "
                            f"pass a new path for a new study")
    if tables and not tables & (OPTUNA_TABLES | {"alembic_version", SERVER_TABLE}):
        # a database with tables, none of them Optuna's or this tool's claims (an empty one, or one that
        # another host of the same study is creating this moment, has nothing to protect)
        raise AutotuneError(f"--storage {url} names {path}, an SQLite file without Optuna's tables (another "
                            f"program's?); it was left as it is: pass a new path for a new study")
