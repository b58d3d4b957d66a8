#!/usr/bin/env bash
# The aligned-pair loads on the GPU, in one call: skinny's MB=1 (B's rows, where N % 4 != 0, read as the aligned
# float4s that hold each lane's four values) and blocked's MA=1 / MB=1 (A's and B's rows likewise). The GPU tests,
# then skinny MB=0 against MB=1 with B through registers (SB=0) beside its default (SB=1: B's ring by cp.async) at
# small-M shapes of odd N, and blocked's four MA x MB through registers (ASYNC=0, AL=0) at misaligned host-bound
# shapes (the random shapes of benchmarks/anyshape.py that ran on cuBLAS), the rest of each config fitted to the
# shape, each shape in one process with its cuBLAS (autotune measure), into $OUT/misaligned-b.sqlite;
# `autotune report` of it at the end.
# From the repository root with OUT set:
#   OUT=out bash benchmarks/release/misaligned_b_check.sh
# With COVER=1, instead, a cover of the misaligned host-bound shapes (benchmarks/host-bound-misaligned-shapes.toml)
# by blocked through registers with MA and MB free, within BUDGET seconds, whose rows scripts/ship_database.py
# can add to the shipped database:
#   OUT=out COVER=1 bash benchmarks/release/misaligned_b_check.sh
source benchmarks/release/common.sh
if [ -n "${COVER:-}" ]; then
  step "cover of the misaligned host-bound shapes, blocked with MA and MB"
  timeout "$((${BUDGET:-420} + 120))" $AT cover --shapes benchmarks/host-bound-misaligned-shapes.toml --family blocked \
    -p ASYNC=0 -p AL=0 -p MA=0,1 -p MB=0,1 --budget "${BUDGET:-420}" --trials "${TRIALS:-10}" \
    --db "$OUT/h200-host-bound-misaligned-pairs.sqlite" --json "$OUT/cover-host-bound-misaligned-pairs-h200.json" \
    2>/dev/null | tail -30 | tee -a "$LOG"
  step "done"
  exit 0
fi
TESTS="${TESTS:-tests/test_gpu_splitk.py tests/test_gpu_align.py}" gpu_tests
for shape in 1x689x7472 8x495x2471 4x2846x758 20x46x9236 43x2170x355 59x635x83 1x14335x4096 16x4095x4096 \
             8x496x2471; do
  step "skinny at $shape"
  family_measure skinny "$OUT/misaligned-b.sqlite" "$shape" SB=0 MB=0,1
  family_measure skinny "$OUT/misaligned-b.sqlite" "$shape"
done
for shape in 144x10131x4 9954x21x61 3078x53x207 1081x3322x15 5898x60x305 432x838x158 4096x1023x16; do
  step "blocked at $shape"
  family_measure blocked "$OUT/misaligned-b.sqlite" "$shape" ASYNC=0 AL=0 MA=0,1 MB=0,1
done
step "report"
timeout 60 $AT report --db "$OUT/misaligned-b.sqlite" 2>&1 | tail -60 | tee -a "$LOG"
step "done"
