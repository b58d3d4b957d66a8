"""The ledger: claims and finished rows shared by every host of one study.

With `--storage postgresql+psycopg://...` searches on several hosts share one Optuna study,
but each keeps its results in its own SQLite file (`--db`). The ledger, a table in that same
database server, is what makes "each config is measured once across all workers" hold across
hosts: a worker claims a measurement there before measuring it, and publishes the finished
row there; a worker on another host that proposes the same config copies the row into its own
results database instead of measuring it again. So every host's database ends up holding every
result it was asked for, with the worker and device that measured it.

One row per measurement key (see store.KEY). A claim held by a dead process on this host, or
older than its time to live (another host's search was killed), is taken over.
"""
from __future__ import annotations

import json
import socket
import time

import sqlalchemy as sa

from .store import CLAIM_TTL_S, DONE, MINE, TAKEN, Key, Owner, alive

TABLE = "autotune_ledger"


def wants_ledger(storage: str | None) -> bool:
    """A database server shares a study across hosts; a journal file is one host's."""
    return bool(storage) and "://" in storage


class Ledger:
    def __init__(self, url: str):
        self.engine = sa.create_engine(url, pool_pre_ping=True)
        with self.engine.begin() as conn:
            conn.execute(sa.text(f"CREATE TABLE IF NOT EXISTS {TABLE} (key TEXT PRIMARY KEY, worker TEXT, "
                                 f"host TEXT, pid INTEGER, expires DOUBLE PRECISION, row TEXT)"))

    def claim(self, key: Key, owner: Owner, ttl_s: float = CLAIM_TTL_S) -> tuple[str, dict | None]:
        """(MINE, None): measure it; (DONE, row): measured elsewhere; (TAKEN, None): in progress."""
        k = _key(key)
        mine = {"key": k, "worker": owner.worker, "host": owner.host, "pid": owner.pid,
                "expires": time.time() + ttl_s}
        with self.engine.begin() as conn:
            inserted = conn.execute(sa.text(
                f"INSERT INTO {TABLE} (key, worker, host, pid, expires) VALUES (:key, :worker, :host, :pid, "
                f":expires) ON CONFLICT (key) DO NOTHING"), mine).rowcount
            if inserted:
                return MINE, None
            held = conn.execute(sa.text(f"SELECT host, pid, expires, row FROM {TABLE} WHERE key = :key"),
                                {"key": k}).one()
            if held.row is not None:
                return DONE, json.loads(held.row)
            if not _stale(held.host, held.pid, held.expires):
                return TAKEN, None
            # take a dead claim over; the old expiry in the WHERE makes the takeover atomic
            taken = conn.execute(sa.text(
                f"UPDATE {TABLE} SET worker = :worker, host = :host, pid = :pid, expires = :expires "
                f"WHERE key = :key AND row IS NULL AND expires = :old"), {**mine, "old": held.expires}).rowcount
            return (MINE, None) if taken else (TAKEN, None)

    def finish(self, key: Key, row: dict) -> None:
        with self.engine.begin() as conn:
            conn.execute(sa.text(f"UPDATE {TABLE} SET row = :row WHERE key = :key"),
                         {"key": _key(key), "row": json.dumps(row, default=str)})

    def release(self, key: Key, owner: Owner) -> None:
        with self.engine.begin() as conn:
            conn.execute(sa.text(f"DELETE FROM {TABLE} WHERE key = :key AND row IS NULL AND host = :host "
                                 f"AND pid = :pid"), {"key": _key(key), "host": owner.host, "pid": owner.pid})

    def close(self) -> None:
        self.engine.dispose()


def _key(key: Key) -> str:
    return "|".join(map(str, key))


def _stale(host: str, pid: int, expires: float) -> bool:
    return expires < time.time() or (host == socket.gethostname() and not alive(pid))
