#!/usr/bin/env bash
# skinny's MB=1 (B's rows, where N % 4 != 0, read as the aligned float4s that hold each lane's four values) on
# the GPU, in one call: its GPU tests, then MB=0 against MB=1 with B through registers (SB=0) beside the default
# (SB=1: B's ring by cp.async), the rest of each config fitted to the shape, at small-M shapes of odd N (the
# random shapes of benchmarks/anyshape.py that ran on cuBLAS, and larger ones) and one aligned twin, each shape
# in one process with its cuBLAS (autotune measure), into $OUT/misaligned-b.sqlite; `autotune report` of it at the end.
# From the repository root with OUT set:
#   OUT=out bash benchmarks/release/misaligned_b_check.sh
source benchmarks/release/common.sh
TESTS="${TESTS:-tests/test_gpu_splitk.py}" gpu_tests
for shape in 1x689x7472 8x495x2471 4x2846x758 20x46x9236 43x2170x355 59x635x83 1x14335x4096 16x4095x4096 \
             8x496x2471; do
  step "skinny at $shape"
  family_measure skinny "$OUT/misaligned-b.sqlite" "$shape" SB=0 MB=0,1
  family_measure skinny "$OUT/misaligned-b.sqlite" "$shape"
done
step "report"
timeout 60 $AT report --db "$OUT/misaligned-b.sqlite" 2>&1 | tail -60 | tee -a "$LOG"
step "done"
