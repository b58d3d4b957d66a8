"""The results database shared by processes: nothing here may release a lock that this process's SQLite
connections hold. Closing any descriptor of a file drops every POSIX lock the process holds on it, so a
check that opened the file with open() let another process write beside a writer of this one (a suite and
two searches on one new database left it corrupt in about one run in four)."""
from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from autotune import store
from autotune.errors import AutotuneError
from autotune.search.storages import check_storage

# Another process tries to take the write lock at once: "locked" while this process holds it.
TRY_WRITE = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], timeout=0)
try:
    conn.execute("BEGIN IMMEDIATE")
    print("took it")
except sqlite3.OperationalError as exc:
    print(exc)
"""


def other_process_writes(path: Path) -> str:
    return subprocess.run([sys.executable, "-c", TRY_WRITE, str(path)], capture_output=True, text=True,
                          timeout=60).stdout.strip()


@pytest.fixture
def held(tmp_path):
    """A database (rollback journal: its locks are on the file itself) whose write lock this process holds."""
    path = tmp_path / "r.sqlite"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("CREATE TABLE results (id INTEGER PRIMARY KEY)")
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("INSERT INTO results VALUES (1)")
    assert other_process_writes(path) == "database is locked"
    yield path
    conn.execute("ROLLBACK")
    conn.close()


@pytest.mark.parametrize("check", [
    store.check_path,
    store.sqlite_tables,
    lambda path: store.open_readonly(path).close(),  # refused (no autotune tables): it still looked at the file
    lambda path: check_storage(f"sqlite:///{path}"),
])
def test_looking_at_a_database_keeps_this_process_locks(check, held):
    try:
        check(held)
    except Exception:  # noqa: BLE001  (a refusal is fine: what it did to the locks is the question)
        pass
    assert other_process_writes(held) == "database is locked"


def test_what_the_checks_still_tell_apart(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("not a database, and long enough to have a header\n")
    assert store.sqlite_tables(text) is None
    empty = tmp_path / "empty.sqlite"
    empty.touch()
    assert store.sqlite_tables(empty) == set()  # an empty file is an empty database
    with pytest.raises(AutotuneError, match="not an SQLite"):
        store.check_path(text)
