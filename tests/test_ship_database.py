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


def test_a_host_bound_row_that_load_runs_at_its_shape_is_shipped(tmp_path):
    """The shipped rows are those load() can run at their shape (api.dispatch.wins_at_its_shape): a row slower
    than cuBLAS on the GPU at a host-bound shape stays when within HOST_SAVING_MS of it, and goes beyond."""
    from autotune.api.dispatch import HOST_SAVING_MS
    from tests.test_dispatch_library import SMALL, timed

    path = tmp_path / "r.sqlite"
    db = store.open_db(path)
    runs = timed(db, (64, 64, 64), "blocked", 0.009 + HOST_SAVING_MS / 2, 0.009, **SMALL)
    slow = timed(db, (128, 64, 64), "blocked", 0.009 + 2 * HOST_SAVING_MS, 0.009, **SMALL)
    large = timed(db, (4096, 64, 64), "blocked", 0.031, 0.030, **SMALL)  # not host-bound: it must beat cuBLAS
    db.close()
    target = tmp_path / "shipped.sqlite"
    ship_module().ship([path], target)
    kept = {r[0] for r in sqlite3.connect(target).execute("SELECT kernel || '@' || M FROM results")}
    assert kept == {f"{runs}@64"}, (slow, large)
