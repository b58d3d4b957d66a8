#!/usr/bin/env bash
# Issue 13, split-K's tile: the blocked default's 128 x 256 (halved where M is 64) against the split
# default's 128 x 128 at the suite's split shapes, and RED=2 again at 64 splits (run-to-run spread).
# Each `autotune measure` is one process with its cuBLAS. From the repository root with OUT set:
#   OUT=out bash benchmarks/release/splitk_tiles_check.sh
source benchmarks/release/common.sh
DB="$WORK/tiles.sqlite"
step "split-K tiles"
splitk_measure "$DB" 128x8192x8192 BN=128,256 SPLITK=4 RED=0,1
splitk_measure "$DB" 1024x1024x1024 BN=128,256 SPLITK=4 RED=0,1
splitk_measure "$DB" 64x8192x8192 BM=64 WM=32 BN=128,256 SPLITK=4,8 RED=0,1
splitk_measure "$DB" 64x14336x4096 BM=64 WM=32 BN=128,256 SPLITK=8 RED=0,1
splitk_measure "$DB" 8192x128x8192 BM=128,256 SPLITK=4 RED=0,1
splitk_measure "$DB" 256x256x262144 BN=128,256 SPLITK=64 RED=1,2
splitk_measure "$DB" 1024x1024x65536 BN=128,256 SPLITK=4,8 RED=1
step "done"
cp "$DB" "$OUT/tiles.sqlite"
