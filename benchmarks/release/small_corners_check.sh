#!/usr/bin/env bash
# The small host-bound lattice on the GPU, in one call: rows at its misaligned corners (scripts/host_bound_shapes.py
# --small, benchmarks/host-bound-small-shapes.toml) measured in one process by benchmarks/small_corners.py within
# BUDGET seconds, into $OUT/host-bound-small.sqlite.gz with the per-corner lines in the log. What the corners'
# fastest kernels take says whether rows within our call's host time can cover anyshape's host-bound shapes.
# (`autotune cover` runs a search per corner: 207 of them would need --budget 518 or more.) From the repository
# root with OUT set:
#   OUT=out bash benchmarks/release/small_corners_check.sh
source benchmarks/release/common.sh
step "rows at the small host-bound lattice's corners (${BUDGET:=240} s)"
timeout "$((BUDGET + 120))" python3 benchmarks/small_corners.py --budget "$BUDGET" --db "$OUT/host-bound-small.sqlite" \
  2>&1 | tee -a "$LOG" | tail -5
gzip "$OUT/host-bound-small.sqlite"
step "done"
