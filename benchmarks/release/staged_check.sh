#!/usr/bin/env bash
# blocked's CS=1 (C staged through shared memory where its rows are not 16-byte aligned) on the GPU, in one
# call: its GPU tests, CS=0 against CS=1 at the same tiles (benchmarks/staged_store.py), then a cover with CS=1 of
# the host-bound shapes whose N is odd (scripts/host_bound_shapes.py --odd-n), whose rows
# scripts/ship_database.py can add to the shipped database.
# From the repository root with OUT set:
#   OUT=out COMMIT=<sources> bash benchmarks/release/staged_check.sh
source benchmarks/release/common.sh
TESTS="${TESTS:-tests/test_gpu.py}" gpu_tests
step "CS=0 against CS=1"
timeout 240 python3 benchmarks/staged_store.py --commit "$COMMIT" -o "$OUT/staged-store-h200.json" 2>&1 | tee -a "$LOG"
step "cover of the host-bound shapes of odd N, CS=1"
timeout "$((${BUDGET:-420} + 120))" $AT cover --shapes benchmarks/host-bound-odd-n-shapes.toml --family blocked \
  -p CS=1 --budget "${BUDGET:-420}" --trials "${TRIALS:-10}" --db "$OUT/h200-host-bound-odd-n-cs.sqlite" \
  --json "$OUT/cover-host-bound-odd-n-cs-h200.json" 2>/dev/null | tail -30 | tee -a "$LOG"
step "done"
