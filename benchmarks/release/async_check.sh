#!/usr/bin/env bash
# Issue 13, the large squares' main loop: cp.async stages (ASYNC=1) against register prefetch, BK 8 and 16,
# every FMA order, for blocked and the tail split at 2048^3 and 4096^3 (each shape's configs in one process
# with its cuBLAS). Rows go to DB (default $OUT/async.sqlite). From the repository root with OUT set:
#   OUT=out bash benchmarks/release/async_check.sh
source benchmarks/release/common.sh
db="${DB:-$OUT/async.sqlite}"; MEASURE_TIMEOUT=${MEASURE_TIMEOUT:-300}
P=(ASYNC=0,1 STAGES=2,3,4 BK=8,16 "ORDER=${ORDERS:-0,1,2,3}")
for shape in ${SHAPES:-4096x4096x4096 2048x2048x2048}; do
  for family in ${FAMILIES:-blocked tailsplit}; do family_measure "$family" "$db" "$shape" "${P[@]}"; done
done
step "done"
