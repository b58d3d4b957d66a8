#!/usr/bin/env bash
# Issue 13, large squares: the tail split (family tailsplit, its default tile, WAVE=132, MAXS=16) measured
# at 2048^3, 4096^3 and 8192^3 into a copy of START_DB, then the shape suite on that database with
# suite_check.sh's budget (TRIALS, TIMEOUT, TOTAL), so that its bests include them. GPU tests first unless
# NO_TESTS. From the repository root with OUT set:
#   TRIALS=8 TIMEOUT=8 TOTAL=210 START_DB=earlier.sqlite OUT=out bash benchmarks/release/large_check.sh
source benchmarks/release/common.sh
TRIALS="${TRIALS:-16}"; TIMEOUT="${TIMEOUT:-15}"; TOTAL="${TOTAL:-420}"
[ -z "$NO_TESTS" ] && gpu_tests
cp "$START_DB" "$OUT/suite.sqlite"
step "tailsplit at the large squares"
for n in 2048 4096 8192; do
  family_measure tailsplit "$OUT/suite.sqlite" ${n}x${n}x${n} WAVE=132 MAXS=16
done
suite_pass
step "done"
tar czf "$OUT/suite.tgz" -C "$WORK" .
