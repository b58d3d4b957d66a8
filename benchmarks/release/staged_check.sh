#!/usr/bin/env bash
# blocked's CS=1 (C staged through shared memory where its rows are not 16-byte aligned) on the GPU, in one
# call: its GPU tests, CS=0 against CS=1 at the same tiles (benchmarks/staged_store.py), then a cover of the
# misaligned host-bound shapes with CS=1, whose rows scripts/ship_database.py can add to the shipped database.
# From the repository root with OUT set:
#   OUT=out COMMIT=<sources> bash benchmarks/release/staged_check.sh
source benchmarks/release/common.sh
TESTS="${TESTS:-tests/test_gpu.py}" gpu_tests
step "CS=0 against CS=1"
timeout 240 python3 benchmarks/staged_store.py --commit "${COMMIT:-}" -o "$OUT/staged-store-h200.json" 2>&1 | tee -a "$LOG"
step "cover of the misaligned host-bound shapes, CS=1"
timeout "$((${BUDGET:-300} + 120))" $AT cover --shapes benchmarks/host-bound-misaligned-shapes.toml --family blocked \
  -p CS=1 --budget "${BUDGET:-300}" --trials "${TRIALS:-10}" --db "$OUT/h200-host-bound-misaligned-cs.sqlite" \
  --json "$OUT/cover-misaligned-cs.json" 2>/dev/null | tail -30 | tee -a "$LOG"
step "done"
