"""Claims: who measures a config, so that every config is measured once across all workers.

A worker claims a measurement key (store.db.KEY) before measuring it and publishes the
finished row; a worker that proposes a claimed config moves on, one that proposes a finished
one reuses the row. One contract (Claims), two places to keep the claims:

  FileClaims    the `claims` table of the results file: the threads and processes of one host
  ServerClaims  a table on the database server of a shared study (--storage postgresql://...):
                hosts that each keep their own results file. A finished row travels with the
                claim, and a host that proposes it copies the row into its own file.

A search uses `claims_for`: the file's claims, behind the server's where there is one. A claim
held by a dead process on this host, or older than its time to live (a search on another host
was killed), is taken over.
"""
from __future__ import annotations

import json
import os
import socket
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable, TypeVar

import sqlite_utils

from autotune.store.db import KEY, immediate, key_where, now
from autotune.store.results import Key, Redo, copy_result, find_key

T = TypeVar("T")

CLAIM_TTL_S = 3600.0  # a claim by a worker on another host is taken over after this long
MINE, DONE, TAKEN = "mine", "done", "taken"
SERVER_TABLE = "autotune_ledger"


@dataclass(frozen=True)
class Owner:
    """Who holds a claim: the search process (not its kernel worker, which may be replaced)."""

    worker: str
    host: str = field(default_factory=socket.gethostname)
    pid: int = field(default_factory=os.getpid)


@dataclass(frozen=True)
class Claimed:
    """MINE: measure it. DONE: `row` is its result (reuse it). TAKEN: a live worker is measuring it."""

    state: str
    row: dict[str, Any] | None = None


class Claims(ABC):
    """The contract every place that keeps claims fulfils."""

    @abstractmethod
    def claim(self, key: Key, owner: Owner, source: str, redo: Redo | None = None) -> Claimed:
        """Take the key, or say who has it. `source` travels with a finished row (export needs it).
        A finished row that `redo` measures again is not DONE: the key is taken anew."""

    @abstractmethod
    def finish(self, key: Key, row: dict[str, Any]) -> None:
        """Publish the measured row; the claim is done."""

    @abstractmethod
    def release(self, key: Key, owner: Owner) -> None:
        """Give an unfinished claim back (interrupted): the next search measures it."""

    def close(self) -> None:
        """Let go of connections."""


def stale(host: str, pid: int, expires: float) -> bool:
    """A claim nobody will finish: expired, or held by a dead process on this host."""
    return expires < time.time() or (host == socket.gethostname() and not alive(pid))


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    return True


def _where() -> str:
    return key_where()


class FileClaims(Claims):
    """Claims in the results file. A finished row is its own proof: record_result inserts it and
    drops the claim in one transaction, so finish has nothing left to do."""

    def __init__(self, db: sqlite_utils.Database, ttl_s: float = CLAIM_TTL_S):
        self.db, self.ttl_s = db, ttl_s

    def claim(self, key: Key, owner: Owner, source: str, redo: Redo | None = None) -> Claimed:
        with immediate(self.db):
            row = find_key(self.db, key, redo)
            if row:
                return Claimed(DONE, row)
            held = self.db.execute(f"SELECT host, pid, expires FROM claims WHERE {_where()}", list(key)).fetchone()
            if held and not stale(*held):
                return Claimed(TAKEN)
            self.db.execute(f"INSERT OR REPLACE INTO claims ({', '.join(KEY)}, owner, host, pid, expires, created_at) "
                            f"VALUES ({', '.join('?' * len(KEY))}, ?, ?, ?, ?, ?)",
                            [*key, owner.worker, owner.host, owner.pid, time.time() + self.ttl_s, now()])
        return Claimed(MINE)

    def finish(self, key: Key, row: dict[str, Any]) -> None:
        pass

    def release(self, key: Key, owner: Owner) -> None:
        with immediate(self.db):
            self.db.execute(f"DELETE FROM claims WHERE {_where()} AND host = ? AND pid = ?",
                            [*key, owner.host, owner.pid])


# What losing the race to create a table on a fresh server looks like: the table made by the other
# host meanwhile (PostgreSQL's IF NOT EXISTS is not atomic against a concurrent CREATE), or a row
# the other inserted first (SQLite's and PostgreSQL's wording).
SCHEMA_RACE = ("already exists", "UNIQUE constraint failed", "duplicate key value")


def retry_schema_race(make: Callable[[], T], attempts: int = 3) -> T:
    """Hosts starting together on a fresh server race to create its tables; the loser finds them made."""
    for attempt in range(attempts):
        try:
            return make()
        except Exception as exc:
            if attempt == attempts - 1 or not any(m in str(exc) for m in SCHEMA_RACE):
                raise
            time.sleep(0.5 * (attempt + 1))
    raise AssertionError("unreachable")


class ServerClaims(Claims):
    """Claims on the shared study's database server, through SQLAlchemy (PostgreSQL, SQLite, ...)."""

    def __init__(self, url: str, ttl_s: float = CLAIM_TTL_S):
        import sqlalchemy as sa  # only a shared study needs it

        self.sa, self.ttl_s = sa, ttl_s
        self.engine = sa.create_engine(url, pool_pre_ping=True)
        retry_schema_race(self._create_table)

    def _create_table(self) -> None:
        with self.engine.begin() as conn:
            conn.execute(self.sa.text(f"CREATE TABLE IF NOT EXISTS {SERVER_TABLE} (key TEXT PRIMARY KEY, "
                                      f"worker TEXT, host TEXT, pid INTEGER, expires DOUBLE PRECISION, row TEXT, "
                                      f"source TEXT)"))

    def claim(self, key: Key, owner: Owner, source: str, redo: Redo | None = None) -> Claimed:
        text, k = self.sa.text, _server_key(key)
        mine = {"key": k, "worker": owner.worker, "host": owner.host, "pid": owner.pid,
                "expires": time.time() + self.ttl_s}
        with self.engine.begin() as conn:
            inserted = conn.execute(text(
                f"INSERT INTO {SERVER_TABLE} (key, worker, host, pid, expires) VALUES (:key, :worker, :host, :pid, "
                f":expires) ON CONFLICT (key) DO NOTHING"), mine).rowcount
            if inserted:
                return Claimed(MINE)
            held = conn.execute(text(f"SELECT host, pid, expires, row FROM {SERVER_TABLE} WHERE key = :key"),
                                {"key": k}).one()
            if held.row is not None and not (redo and redo.redoes(json.loads(held.row))):
                return Claimed(DONE, json.loads(held.row))
            if held.row is not None:  # measure it again: the old row in the WHERE makes the takeover atomic
                taken = conn.execute(text(
                    f"UPDATE {SERVER_TABLE} SET worker = :worker, host = :host, pid = :pid, expires = :expires, "
                    f"row = NULL WHERE key = :key AND row = :old"), {**mine, "old": held.row}).rowcount
                return Claimed(MINE) if taken else Claimed(TAKEN)
            if not stale(held.host, held.pid, held.expires):
                return Claimed(TAKEN)
            # take a dead claim over; the old expiry in the WHERE makes the takeover atomic
            taken = conn.execute(text(
                f"UPDATE {SERVER_TABLE} SET worker = :worker, host = :host, pid = :pid, expires = :expires "
                f"WHERE key = :key AND row IS NULL AND expires = :old"), {**mine, "old": held.expires}).rowcount
            return Claimed(MINE) if taken else Claimed(TAKEN)

    def finish(self, key: Key, row: dict[str, Any]) -> None:
        with self.engine.begin() as conn:
            conn.execute(self.sa.text(f"UPDATE {SERVER_TABLE} SET row = :row WHERE key = :key"),
                         {"key": _server_key(key), "row": json.dumps(row, default=str)})

    def release(self, key: Key, owner: Owner) -> None:
        with self.engine.begin() as conn:
            conn.execute(self.sa.text(f"DELETE FROM {SERVER_TABLE} WHERE key = :key AND row IS NULL AND host = :host "
                                      f"AND pid = :pid"), {"key": _server_key(key), "host": owner.host, "pid": owner.pid})

    def close(self) -> None:
        self.engine.dispose()


def _server_key(key: Key) -> str:
    return "|".join(map(str, key))


class HostAndServer(Claims):
    """The server's claims (across hosts) first, then the file's (across this host's workers).
    A row finished on another host is copied into this host's file and reused from there."""

    def __init__(self, file: FileClaims, server: ServerClaims):
        self.file, self.server = file, server

    def claim(self, key: Key, owner: Owner, source: str, redo: Redo | None = None) -> Claimed:
        shared = self.server.claim(key, owner, source, redo)
        if shared.state == DONE and shared.row is not None:
            return Claimed(DONE, copy_result(self.file.db, shared.row, source, redo))
        if shared.state == TAKEN:
            return shared
        local = self.file.claim(key, owner, source, redo)
        if local.state == DONE and local.row is not None:
            self.server.finish(key, local.row)  # measured here before the server knew of it
        elif local.state == TAKEN:
            self.server.release(key, owner)
        return local

    def finish(self, key: Key, row: dict[str, Any]) -> None:
        self.file.finish(key, row)
        self.server.finish(key, row)

    def release(self, key: Key, owner: Owner) -> None:
        self.file.release(key, owner)
        self.server.release(key, owner)

    def close(self) -> None:
        self.server.close()


def shares_claims(storage: str | None) -> bool:
    """A database server shares a study across hosts; a journal file is one host's."""
    return bool(storage) and "://" in str(storage)


def claims_for(db: sqlite_utils.Database, server: ServerClaims | None) -> Claims:
    """What a search worker claims through: its results file, behind the server where there is one."""
    return HostAndServer(FileClaims(db), server) if server else FileClaims(db)
