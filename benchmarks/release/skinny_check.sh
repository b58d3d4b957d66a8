#!/usr/bin/env bash
# Issue 13, skinny M: SA=1 (A copied into shared memory by each slice, a piece ahead) and AH (groups
# of B rows in flight) measured at the suite's skinny shapes into a copy of START_DB, then a suite pass
# on that database (its bests are the shape-aware starts). Outputs in $OUT as suite_check.sh's. From the
# repository root with OUT set:
#   TRIALS=8 TIMEOUT=8 TOTAL=240 START_DB=earlier.sqlite OUT=out bash benchmarks/release/skinny_check.sh
source benchmarks/release/common.sh
TRIALS="${TRIALS:-8}"; TIMEOUT="${TIMEOUT:-8}"; TOTAL="${TOTAL:-240}"
cp "$START_DB" "$OUT/suite.sqlite"
step "GPU tests of the skinny family"
timeout 120 python3 -m pytest -m gpu -p no:cacheprovider -n 0 --timeout 60 tests/test_gpu_splitk.py -k skinny \
  >"$WORK/gpu_tests.txt" 2>&1
grep -E "passed|failed|FAILED|Error" "$WORK/gpu_tests.txt" | tail -15 | tee -a "$LOG"
step "skinny SA=1 / AH at the skinny shapes"
for shape in 16x8192x8192 16x14336x4096 16x4096x14336; do
  family_measure skinny "$OUT/suite.sqlite" $shape MR=16 KT=16,32 SA=1 AH=1,2 KW=4,8 SPLITK=4,8
done
for shape in 8x8192x8192 8x14336x4096; do
  family_measure skinny "$OUT/suite.sqlite" $shape MR=8 KT=32,64 SA=1 AH=2,3 KW=4,8 SPLITK=4,8
done
for shape in 1x8192x8192 1x14336x4096; do
  family_measure skinny "$OUT/suite.sqlite" $shape MR=1 KT=64 SA=1 AH=2,3 KW=8,16 SPLITK=2,4
done
suite_pass
step "done"
tar czf "$OUT/suite.tgz" -C "$WORK" .
