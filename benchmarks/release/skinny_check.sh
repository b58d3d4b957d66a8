#!/usr/bin/env bash
# Issue 13, skinny M: SA=1 (A copied into shared memory by each slice, a piece ahead) and AH (groups
# of B rows in flight) measured at the suite's skinny shapes into a copy of START_DB, then the suite's
# outputs from that database: a tuning pass with TOTAL > 0 (its bests are the shape-aware starts),
# else `--no-tune` (the earlier pass's rows and these). GPU tests first unless NO_TESTS. Outputs in
# $OUT as suite_check.sh's. From the repository root with OUT set:
#   TOTAL=0 START_DB=earlier.sqlite OUT=out bash benchmarks/release/skinny_check.sh
source benchmarks/release/common.sh
TRIALS="${TRIALS:-8}"; TIMEOUT="${TIMEOUT:-8}"; TOTAL="${TOTAL:-0}"
cp "$START_DB" "$OUT/suite.sqlite"
[ -z "$NO_TESTS" ] && gpu_tests
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
if [ "$TOTAL" -gt 0 ]; then
  suite_pass
else
  step "autotune suite --no-tune"
  timeout 120 $AT suite --shapes autotune/api/shapes.toml --no-tune --db "$OUT/suite.sqlite" --out "$OUT" 2>&1 \
    | tail -40 | tee -a "$LOG"
fi
step "done"
tar czf "$OUT/suite.tgz" -C "$WORK" .
