#!/usr/bin/env bash
# Stream-K's 128 x 128 tile in eight warps of 32 x 64 (the fit's EIGHT_WARPS) against four of 64 x 64 (splitk's
# default), both at SKB=2, at five few-tile shapes; then the eight warps at SKB=1 and 2 where the fit's SKB=1 differs
# most (1024x1024x16384, 2048x2048x8192). common.sh's family_measure (one process a shape, cuBLAS timed in it, the
# rest of each config fitted around the values named); every row of both passes, one a line
# (M N K kernel status ms cuBLAS-ms registers), as benchmarks/data/streamk-warps-h100.txt holds them. Needs a GPU;
# OUT and COMMIT may be set (common.sh).
source benchmarks/release/common.sh
step "four against eight warps"
for shape in 1024x1024x4096 1024x1024x16384 1536x1536x1536 2048x2048x8192 2176x2048x2048; do
  family_measure streamk "$WORK/warps.sqlite" "$shape" WM=32,64 SKB=2
done
step "eight warps, one or two blocks an SM"
for shape in 1024x1024x16384 2048x2048x8192; do
  family_measure streamk "$WORK/blocks.sqlite" "$shape" WM=32 SKB=1,2
done
python3 - "$WORK"/warps.sqlite "$WORK"/blocks.sqlite <<'PY' | tee "$OUT/streamk-warps-$TAG.txt"
import sqlite3, sys
rows = []
for path in sys.argv[1:]:
    rows += sqlite3.connect(path).execute(
        "SELECT M, N, K, kernel, status, round(time_ms, 4), round(cublas_ms, 4), num_regs FROM results").fetchall()
for row in sorted(rows, key=lambda r: r[:4]):  # a config's rows of both passes side by side
    print(*row)
PY
