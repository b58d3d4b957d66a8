#!/usr/bin/env bash
# blocked's smaller tiles at the host-bound random shapes of benchmarks/anyshape.py (seed 1) whose C is written in
# few tiles of the default 128 x 256 or whose K is short, each tile in one process with its cuBLAS (autotune
# measure; the other parameters fitted to the shape), into $OUT/small-tiles.sqlite; `autotune report` of it at the end.
# From the repository root with OUT set:
#   OUT=out bash benchmarks/release/small_tiles_check.sh
source benchmarks/release/common.sh
TILES=("BM=64 BN=64 WM=32 WN=32 WNITER=1 TM=4 TN=4" "BM=32 BN=64 WM=16 WN=32 WNITER=1 TM=4 TN=4"
       "BM=64 BN=128 WM=32 WN=64 WNITER=2 TM=8 TN=4" "BM=128 BN=64 WM=64 WN=32 WNITER=2 TM=8 TN=4")
for shape in ${SHAPES:-144x10131x4 9954x21x61 11662x49x18 1139x570x66 432x838x158 3078x53x207 120x12437x16 43x2170x355}; do
  step "blocked tiles at $shape"
  for tile in "${TILES[@]}"; do
    # shellcheck disable=SC2086
    MEASURE_TIMEOUT=60 family_measure blocked "$OUT/small-tiles.sqlite" "$shape" $tile
  done
done
step "report"
timeout 60 $AT report --db "$OUT/small-tiles.sqlite" 2>&1 | tail -80 | tee -a "$LOG"
step "done"
