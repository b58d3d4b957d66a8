"""The database the package ships (scripts/ship_database.py): every row names a kernel this version can
run (its family's every parameter has a value), and merging keeps the columns that only a later
database has (a family's parameters are columns a database gains with its first row of that family)."""
from __future__ import annotations

import importlib.util
import sqlite3
from pathlib import Path

import pytest

from autotune import store
from autotune.families import config_of_row

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = sorted((ROOT / "autotune" / "store" / "tuned").glob("*.sqlite"))


def ship_module():
    spec = importlib.util.spec_from_file_location("ship_database", ROOT / "scripts" / "ship_database.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_every_shipped_row_names_a_kernel_with_its_source(path):
    db = store.open_readonly(str(path))
    rows = list(db.query("SELECT * FROM results"))
    assert rows
    for row in rows:
        config_of_row(row)  # a SpaceError here: the row lost a parameter's column
        assert store.source(db, row["source_hash"]) is not None, row["kernel"]


def make_db(path: Path, params: dict[str, int], time_ms: float) -> None:
    conn = sqlite3.connect(path)
    cols = ", ".join(f'"{k}" INTEGER' for k in params)
    conn.execute(f"CREATE TABLE results (id INTEGER PRIMARY KEY, backend TEXT, gpu_name TEXT, M INTEGER, "
                 f"N INTEGER, K INTEGER, family TEXT, status TEXT, time_ms REAL, cublas_ms REAL, "
                 f"source_hash TEXT, TA INTEGER, TB INTEGER, BLAS INTEGER, batch INTEGER, precision TEXT, {cols})")
    conn.execute("CREATE TABLE sources (source_hash TEXT PRIMARY KEY, source TEXT)")
    names = ", ".join(f'"{k}"' for k in params)
    marks = ", ".join("?" for _ in params)
    conn.execute(f"INSERT INTO results (backend, gpu_name, M, N, K, family, status, time_ms, cublas_ms, source_hash, "
                 f"{names}) VALUES ('cuda', 'G', 64, 64, 64, 'f', 'ok', ?, 1.0, ?, {marks})",
                 [time_ms, f"h{time_ms}", *params.values()])
    conn.execute("INSERT INTO sources VALUES (?, 'src')", (f"h{time_ms}",))
    conn.commit()
    conn.close()


def test_merging_keeps_the_columns_only_a_later_database_has(tmp_path):
    first, second = tmp_path / "a.sqlite", tmp_path / "b.sqlite"
    make_db(first, {"BM": 64}, 0.5)
    make_db(second, {"BM": 128, "SKB": 2}, 0.4)
    target = tmp_path / "shipped.sqlite"
    ship_module().ship([first, second], target)
    conn = sqlite3.connect(target)
    kept = conn.execute('SELECT BM, SKB, time_ms FROM results').fetchall()
    assert kept == [(128, 2, 0.4)]  # the fastest of the shape, with its SKB
