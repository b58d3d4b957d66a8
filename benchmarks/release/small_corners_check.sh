#!/usr/bin/env bash
# The small host-bound lattice on the GPU, in one call: `autotune cover` of its misaligned corners
# (scripts/host_bound_shapes.py --small, benchmarks/host-bound-small-shapes.toml) within BUDGET seconds and TRIALS
# trials a product, into $OUT/h200-host-bound-small.sqlite with the per-product report beside it. What the
# corners' fastest kernels take says whether rows within our call's host time can cover anyshape's host-bound
# shapes. From the repository root with OUT set:
#   OUT=out bash benchmarks/release/small_corners_check.sh
source benchmarks/release/common.sh
step "cover of the small host-bound lattice (${BUDGET:=300} s, ${TRIALS:=3} trials a product)"
timeout "$((BUDGET + 120))" $AT cover --shapes benchmarks/host-bound-small-shapes.toml --budget "$BUDGET" \
  --trials "$TRIALS" --db "$OUT/h200-host-bound-small.sqlite" --json "$OUT/cover-host-bound-small-h200.json" \
  2>/dev/null | tail -40 | tee -a "$LOG"
gzip -k "$OUT/h200-host-bound-small.sqlite"
step "done"
