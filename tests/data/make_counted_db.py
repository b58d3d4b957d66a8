"""Writes tests/data/h200-4096-naive-tiled-counted.sqlite: the committed H200 naive and tiled search at 4096^3 with the
SASS counts of its ten fastest kernels saved in its kernels table, as a search saves them today.
The report test reads it so that it analyses only the ladder's kernels (the counting path stays
tested) instead of also the ten T=64 kernels, ~30 CPU-seconds of NVRTC on CI's two cores.

    python tests/data/make_counted_db.py
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from autotune import store  # noqa: E402
from autotune.backends.outcome import OK  # noqa: E402
from autotune.explain import counts as ex  # noqa: E402
from autotune.families import config_of_row  # noqa: E402
from autotune.packed import unpacked  # noqa: E402

SOURCE = ROOT / "benchmarks" / "data" / "h200-4096-naive-tiled-search.sqlite.gz"
TARGET = Path(__file__).resolve().parent / "h200-4096-naive-tiled-counted.sqlite"
SHAPE = (4096, 4096, 4096)


def main() -> None:
    shutil.copyfile(unpacked(SOURCE), TARGET)
    db = store.open_db(TARGET)
    rows = sorted(store.results(db, SHAPE, status=OK), key=lambda r: r["time_ms"])[:10]
    for row in rows:
        ex.kernel_counts(config_of_row(row), store.source(db, row["source_hash"]), row["arch"], db, save=True)
    print(f"{TARGET.name}: counts of {len(rows)} kernels saved")


if __name__ == "__main__":
    main()
