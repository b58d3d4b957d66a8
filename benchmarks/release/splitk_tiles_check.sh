#!/usr/bin/env bash
# Issue 13, split-K's tile: the blocked default's 128 x 256 (halved where M is 64) against the split
# default's 128 x 128 at the suite's split shapes, and RED=2 again at 64 splits (run-to-run spread).
# Each `autotune measure` is one process with its cuBLAS. From the repository root with OUT set:
#   OUT=out bash benchmarks/release/splitk_tiles_check.sh
source benchmarks/release/common.sh
DB="$WORK/tiles.sqlite"
measure() {  # measure SHAPE PARAMS...
  local shape=$1; shift
  local args=(); for kv in "$@"; do args+=(-p "$kv"); done
  echo "-- $shape $*" | tee -a "$LOG"
  read -r M N K <<<"${shape//x/ }"
  timeout 150 $AT measure --M "$M" --N "$N" --K "$K" --family splitk "${args[@]}" --db "$DB" 2>&1 \
    | grep -v "no SASS" | tee -a "$LOG"
}
step "split-K tiles"
measure 128x8192x8192 BN=128,256 SPLITK=4 RED=0,1
measure 1024x1024x1024 BN=128,256 SPLITK=4 RED=0,1
measure 64x8192x8192 BM=64 WM=32 BN=128,256 SPLITK=4,8 RED=0,1
measure 64x14336x4096 BM=64 WM=32 BN=128,256 SPLITK=8 RED=0,1
measure 8192x128x8192 BM=128,256 SPLITK=4 RED=0,1
measure 256x256x262144 BN=128,256 SPLITK=64 RED=1,2
measure 1024x1024x65536 BN=128,256 SPLITK=4,8 RED=1
step "done"
cp "$DB" "$OUT/tiles.sqlite"
