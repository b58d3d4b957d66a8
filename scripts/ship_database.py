"""Make the tuned database the package ships (autotune/store/tuned/) from results databases: of the
verified rows whose kernel beat cuBLAS timed beside it, or that api.dispatch.wins_at_its_shape lets run at
their own shape (host-bound calls), the fastest of each GPU model, shape, layout, batch count and contract,
the only rows load() can ever run (api.dispatch takes a shape's fastest row of the call's layout and
contract, and runs it only where that rule says); their sources and the cuBLAS baselines. Trials, claims,
SASS counts and profiles stay behind.

    python scripts/ship_database.py results.sqlite [more.sqlite ...] autotune/store/tuned/h200.sqlite

The H200's: the shape suite's searches (benchmarks/data/h200-suite.sqlite.gz, h200-few-tiles.sqlite.gz)
and the host-bound shapes' (h200-host-bound.sqlite.gz, `autotune cover --shapes
benchmarks/host-bound-shapes.toml`; h200-host-bound-misaligned.sqlite.gz, the same with
benchmarks/host-bound-misaligned-shapes.toml; h200-host-bound-misaligned-pairs.sqlite.gz, the same by blocked with MA and
MB free), each gunzipped first, in that order, then those that benchmarks/release/corners_ship_check.sh merged
(the small host-bound lattice's corners, h200-host-bound-small.sqlite.gz; then the long-K, tall and wide corners,
h200-long-k-tall-wide-corners.sqlite.gz; then the shallow ones, h200-shallow-corners.sqlite.gz); docs/pytorch.md says how. The H100's (h100.sqlite):
the small host-bound lattice's corners (h100-host-bound-small.sqlite.gz, benchmarks/small_corners.py), then
those that benchmarks/release/corners_ship_check.sh merged (the older lattices', then the long-K and the tall
corners: h100-long-k-corners.sqlite.gz, h100-tall-corners.sqlite.gz) and the shape suite's one pass
(h100-suite.sqlite.gz); docs/results-h100.md says how each was measured.
"""
from __future__ import annotations

import shutil
import sqlite3
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from autotune.api.dispatch import wins_at_its_shape  # noqa: E402


def merge(conn: sqlite3.Connection, other: Path) -> None:
    """Another database's results and sources into this one (new ids). A family's parameters are columns
    that a database gains with its first row of that family, so the other's columns this one lacks are
    added first: a row without its parameters' values names no kernel (api.dispatch skips it)."""
    conn.execute("ATTACH DATABASE ? AS other", (str(other),))
    for table in ("results", "sources"):
        mine = {r[1] for r in conn.execute(f"PRAGMA main.table_info({table})")}
        theirs = [(r[1], r[2]) for r in conn.execute(f"PRAGMA other.table_info({table})")]
        for name, kind in theirs:
            if name not in mine:
                conn.execute(f'ALTER TABLE main.{table} ADD COLUMN "{name}" {kind}')
        columns = ", ".join(f'"{c}"' for c, _ in theirs if c != "id")
        conn.execute(f"INSERT OR IGNORE INTO main.{table} ({columns}) SELECT {columns} FROM other.{table}")
    conn.commit()
    conn.execute("DETACH DATABASE other")


def drop_losers(conn: sqlite3.Connection) -> None:
    """Only the rows load() can run at their own shape: verified ones that beat cuBLAS timed beside them, or
    that api.dispatch.wins_at_its_shape lets run there (a host-bound call that the short way makes faster)."""
    cursor = conn.execute("SELECT * FROM results")
    columns = [d[0] for d in cursor.description]
    rows = [dict(zip(columns, values)) for values in cursor]
    losers = [(r["id"],) for r in rows if not (r["status"] == "ok" and r["cublas_ms"] is not None
                                               and (r["time_ms"] < r["cublas_ms"] or wins_at_its_shape(r)))]
    conn.executemany("DELETE FROM results WHERE id = ?", losers)


def ship(sources: list[Path], target: Path) -> dict[str, int]:
    tmp = target.with_suffix(".tmp")
    shutil.copyfile(sources[0], tmp)
    conn = sqlite3.connect(tmp)
    try:
        conn.execute("PRAGMA journal_mode = DELETE")  # one file: no -wal beside it in the package
        for other in sources[1:]:
            merge(conn, other)
        drop_losers(conn)
        conn.execute("""DELETE FROM results WHERE id NOT IN (SELECT id FROM (SELECT id, ROW_NUMBER() OVER (
                        PARTITION BY backend, gpu_name, M, N, K, COALESCE(TA, 0), COALESCE(TB, 0), COALESCE(BLAS, 0),
                        COALESCE(batch, 1), COALESCE(precision, 'fp32') ORDER BY time_ms) AS rank FROM results)
                        WHERE rank = 1)""")
        conn.execute("DELETE FROM sources WHERE source_hash NOT IN (SELECT source_hash FROM results)")
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        for table in {"trials", "claims", "kernels", "profiles"} & tables:
            conn.execute(f"DELETE FROM {table}")
        conn.commit()
        conn.execute("VACUUM")
        counts = {t: conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in ("results", "sources")}
    finally:
        conn.close()
    tmp.replace(target)
    return counts


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit("usage: python scripts/ship_database.py results.sqlite [more.sqlite ...] target.sqlite")
    print(ship([Path(p) for p in sys.argv[1:-1]], Path(sys.argv[-1])))
