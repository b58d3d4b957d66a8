"""Slim a results database for benchmarks/data: every result row and cuBLAS baseline stays (what the
reports, the time model and the shipped database read), optionally only those of some shapes; the
sources stay only for each shape's and family's fastest verified row (what ship_database.py and a
replay of the winners need); the sampler's trials and the profiles go. The rows say what each kernel
was (family and parameters), so any other source renders again from today's templates.

    python scripts/slim_database.py search.sqlite slim.sqlite [--shapes benchmarks/some-shapes.toml --group G]
"""
from __future__ import annotations

import argparse
import shutil
import sqlite3
import sys
from pathlib import Path

import tomllib

BEST_SOURCES = """
DELETE FROM sources WHERE source_hash NOT IN (
  SELECT source_hash FROM results r WHERE status = 'ok' AND time_ms = (
    SELECT min(time_ms) FROM results q WHERE q.M = r.M AND q.N = r.N AND q.K = r.K AND q.family = r.family
      AND q.status = 'ok'))
"""


def keep_shapes(conn: sqlite3.Connection, shapes: list[tuple[int, int, int]]) -> None:
    conn.execute("CREATE TEMP TABLE keep (M INTEGER, N INTEGER, K INTEGER)")
    conn.executemany("INSERT INTO keep VALUES (?, ?, ?)", shapes)
    for table in ("results", "baselines"):
        conn.execute(f"DELETE FROM {table} WHERE (M, N, K) NOT IN (SELECT M, N, K FROM keep)")


def slim(src: Path, dst: Path, shapes: list[tuple[int, int, int]] | None) -> None:
    shutil.copyfile(src, dst)
    conn = sqlite3.connect(dst)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if shapes is not None:
        keep_shapes(conn, shapes)
    for table in {"trials", "profiles", "claims"} & tables:
        conn.execute(f"DELETE FROM {table}")
    conn.execute(BEST_SOURCES)
    if "kernels" in tables:  # SASS counts of kernels whose rows are gone
        conn.execute("DELETE FROM kernels WHERE source_hash NOT IN (SELECT source_hash FROM results)")
    conn.commit()
    conn.execute("VACUUM")
    conn.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("src")
    parser.add_argument("dst")
    parser.add_argument("--shapes", help="a shapes file (autotune/api/shapes.toml's format): keep only its shapes")
    parser.add_argument("--group", action="append", help="with --shapes: only this group's shapes (repeatable)")
    args = parser.parse_args()
    shapes = None
    if args.shapes:
        entries = tomllib.loads(Path(args.shapes).read_text())["shapes"]
        shapes = [(s["M"], s["N"], s["K"]) for s in entries if not args.group or s.get("group") in args.group]
    slim(Path(args.src), Path(args.dst), shapes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
