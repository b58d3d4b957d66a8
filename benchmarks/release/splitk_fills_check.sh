#!/usr/bin/env bash
# Split-K with the splits that fill the SMs (splitk.fills: 66 on 132 SMs) against the power of two below them, at
# few-tile shapes of long K: common.sh's splitk_measure of the fitted default with SPLITK and RED set, in two passes
# (each into a database of its own, so every config is measured twice), cuBLAS timed in the same process; then every
# row of both, one a line (M N K kernel status ms cuBLAS-ms id), as benchmarks/data/splitk-fills-h100.txt holds them
# (whose 200x300x50000 rows, 32 against 33 splits, were measured while the space still held SMs / 4: no longer a
# split here). Needs a GPU; OUT and COMMIT may be set (common.sh).
source benchmarks/release/common.sh
for pass in 1 2; do
  step "pass $pass"
  for case in 256x256x100000:64,66 256x256x262144:64,66 128x128x100000:64,66; do
    splitk_measure "$WORK/fills-$pass.sqlite" "${case%%:*}" "SPLITK=${case##*:}" RED=1,2
  done
done
python3 - "$WORK"/fills-1.sqlite "$WORK"/fills-2.sqlite <<'PY' | tee "$OUT/splitk-fills-$TAG.txt"
import sqlite3, sys
rows = []
for path in sys.argv[1:]:
    rows += sqlite3.connect(path).execute(
        "SELECT M, N, K, kernel, status, round(time_ms, 4), round(cublas_ms, 4), id FROM results").fetchall()
for row in sorted(rows, key=lambda r: r[:4]):  # the passes' rows of a config side by side, pass 1 first
    print(*row)
PY
