"""Make the tuned database the package ships (autotune/store/tuned/) from a results database: of the
verified rows whose kernel beat cuBLAS timed beside it, the fastest of each GPU model, shape, layout,
batch count and contract, the only rows load() can ever run (api.dispatch takes a shape's fastest row
of the call's layout and contract, and runs it only where it beat cuBLAS); their sources and the
cuBLAS baselines. Trials, claims, SASS counts and profiles stay behind.

    python scripts/ship_database.py results.sqlite autotune/store/tuned/h200.sqlite
"""
from __future__ import annotations

import shutil
import sqlite3
import sys
from pathlib import Path


def ship(source: Path, target: Path) -> dict[str, int]:
    tmp = target.with_suffix(".tmp")
    shutil.copyfile(source, tmp)
    conn = sqlite3.connect(tmp)
    try:
        conn.execute("PRAGMA journal_mode = DELETE")  # one file: no -wal beside it in the package
        conn.execute("DELETE FROM results WHERE NOT (status = 'ok' AND cublas_ms IS NOT NULL AND time_ms < cublas_ms)")
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
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().splitlines()[-1].strip())
    print(ship(Path(sys.argv[1]), Path(sys.argv[2])))
