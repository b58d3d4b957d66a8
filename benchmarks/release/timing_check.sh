#!/usr/bin/env bash
# Issue 13: the GPU tests; the launch path's share of a timed run
# (benchmarks/launch_gap.py: cuBLAS and family defaults with the head start and without); blocked
# AL=1 against AL=0 where rows are not 16-byte aligned; small tiles, with and without split K, at the
# small squares. Each `autotune measure` is one process with its cuBLAS. From the repository root:
#   OUT=out bash benchmarks/release/timing_check.sh
source benchmarks/release/common.sh
DB="$WORK/timing.sqlite"
step "GPU tests"
timeout 250 python3 -m pytest -m gpu -p no:cacheprovider --timeout 90 tests >"$OUT/gpu_tests.txt" 2>&1
grep -E "passed|failed|FAILED|Error" "$OUT/gpu_tests.txt" | tail -15 | tee -a "$LOG"
step "launch gap"
timeout 150 python3 benchmarks/launch_gap.py --out "$OUT/launch-gap.json" 2>&1 | tee -a "$LOG"
step "AL at 4097x4095x4093"
family_measure blocked "$DB" 4097x4095x4093 AL=0,1
family_measure blocked "$DB" 4097x4095x4093 AL=0,1 ASYNC=1 STAGES=3
step "small squares"
family_measure blocked "$DB" 512x512x512 BM=32,64 BN=64 WM=16,32 WN=32,64 WNITER=1 TM=4 TN=4
family_measure splitk "$DB" 512x512x512 BM=32,64 BN=64 WM=16,32 WN=32 WNITER=1 TM=4 TN=4 SPLITK=2,4 RED=1
family_measure blocked "$DB" 1024x1024x1024 BM=64 BN=64,128 WM=32 WN=32,64 WNITER=1,2 TM=4 TN=4
family_measure splitk "$DB" 1024x1024x1024 BM=64 BN=64,128 WM=32 WN=64 WNITER=2 TM=4 TN=4 SPLITK=2,4 RED=1
family_measure blocked "$DB" 1024x1024x1024 BM=64,128 BN=128 WM=32,64 WN=64
step "done"
cp "$DB" "$OUT/timing.sqlite"
