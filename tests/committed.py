"""The databases committed under benchmarks/data, opened by the tests that check a figure or a comment against them."""
from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

from autotune.packed import unpacked

DATA = Path(__file__).resolve().parents[1] / "benchmarks" / "data"


@contextmanager
def committed_database(name: str) -> Iterator[sqlite3.Connection]:
    """A gzipped database of benchmarks/data, unpacked (autotune.packed) and opened read-only (immutable: no -wal or
    -shm file beside it)."""
    with closing(sqlite3.connect(f"file:{unpacked(DATA / name)}?immutable=1", uri=True)) as conn:
        yield conn
