#!/usr/bin/env bash
# Split-K where M and N are just past a tile (few tiles, mostly padding, long K): 128 x 128 against 128 x 256 tiles,
# 32 against 64 splits, summed in a chain (RED=0) or a tree (RED=2; refused where the workspace cannot hold 64
# splits' partial tiles), at 200x300x50000, 300x300x50000 and 200x600x50000. common.sh's splitk_measure, cuBLAS timed
# in the same process; every row, one a line (M N K kernel status ms cuBLAS-ms registers), as
# benchmarks/data/splitk-past-a-tile-h100.txt holds them. Needs a GPU; OUT and COMMIT may be set (common.sh).
source benchmarks/release/common.sh
step "splitk tiles and splits"
for shape in 200x300x50000 300x300x50000 200x600x50000; do
  splitk_measure "$WORK/tiles.sqlite" "$shape" BN=128,256 SPLITK=32,64 RED=0,2
done
python3 - "$WORK"/tiles.sqlite <<'PY' | tee "$OUT/splitk-past-a-tile-$TAG.txt"
import sqlite3, sys
rows = sqlite3.connect(sys.argv[1]).execute(
    "SELECT M, N, K, kernel, status, round(time_ms, 4), round(cublas_ms, 4), num_regs FROM results").fetchall()
for row in sorted(rows, key=lambda r: r[:4]):
    print(*row)
PY
