#!/usr/bin/env bash
# Split-K with the splits that fill the SMs (splitk.fills: 66 on 132 SMs) against the power of two below them, at
# few-tile shapes of long K: `autotune measure` of the fitted default with SPLITK and RED set, every pair twice
# (the second time --again), cuBLAS timed in the same process; then every row of the database, one a line (M N K
# kernel status ms cuBLAS-ms id), as benchmarks/data/splitk-fills-h100.txt holds them (whose 200x300x50000 rows, 32
# against 33 splits, were measured while the space still held SMs / 4: no longer a split here). Needs a GPU; OUT may be set.
set -euo pipefail
OUT=${OUT:-out}; mkdir -p "$OUT"
DB=$(mktemp -d)/fills.sqlite
AT="autotune"; command -v autotune >/dev/null || AT="python3 -m autotune.cli"
for again in "" --again; do
  for case in 256x256x100000:64,66 256x256x262144:64,66 128x128x100000:64,66; do
    IFS=x read -r M N K <<<"${case%%:*}"
    $AT measure --M "$M" --N "$N" --K "$K" --family splitk -p "SPLITK=${case##*:}" -p RED=1,2 $again --db "$DB" | tail -5
  done
done
python3 - "$DB" <<'PY' | tee "$OUT/splitk-fills.txt"
import sqlite3, sys
for row in sqlite3.connect(sys.argv[1]).execute(
        "SELECT M, N, K, kernel, status, round(time_ms, 4), round(cublas_ms, 4), id FROM results ORDER BY M, N, K, kernel, id"):
    print(*row)
PY
