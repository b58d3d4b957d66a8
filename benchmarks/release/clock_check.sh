#!/usr/bin/env bash
# Issue 13: the SM clock and board power under our kernels and cuBLAS (benchmarks/profiling/clock_probe.py).
# First the bests of DB (a suite database) at SHAPES, then, at 4096^3, each blocked ORDER alone: each
# measured into its own database, which autotune.load() then picks it from. From the repository root:
#   OUT=out DB=/tmp/s.sqlite bash benchmarks/release/clock_check.sh
source benchmarks/release/common.sh
PROBE="python3 benchmarks/profiling/clock_probe.py --seconds ${SECONDS_PER_PHASE:-3}"
step "the suite's bests against cuBLAS"
timeout 300 $PROBE --db "$DB" --shapes "${SHAPES:-4096x4096x4096,2048x2048x2048,8192x8192x8192,16x14336x4096}" \
  --out "$OUT/clock-bests.json" 2>&1 | tee -a "$LOG"
for order in ${ORDERS:-0 1 2 3}; do
  step "blocked ORDER=$order at 4096^3"
  family_measure blocked "$WORK/order$order.sqlite" 4096x4096x4096 "ORDER=$order" >/dev/null
  timeout 120 $PROBE --db "$WORK/order$order.sqlite" --shapes 4096x4096x4096 --rounds 1 2>&1 | tee -a "$LOG"
done
step "done"
