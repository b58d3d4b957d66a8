#!/usr/bin/env bash
# SCALE=1 (each row and column scaled by its norm, ozaki_math.norm_shifts) on the GPU, in one call: the ozaki GPU
# tests, then ozakiwg with 7 moduli scaled by the norm beside 8 and 7 by the largest value, randn and wide inputs,
# at 4096³ and 8192³ (and 16384³ for the first two on randn), speed and error against cuBLAS SGEMM (benchmarks/precision_vs_cublas.py), each file into $OUT for
# benchmarks/ozaki_collect.py; at the end the default fp32-tc search at 8192 (does it find SCALE=1?).
# From the repository root with OUT set:
#   OUT=out bash benchmarks/release/ozaki_norm_check.sh
source benchmarks/release/common.sh
TESTS="${TESTS:-tests/test_gpu_ozaki.py}" gpu_tests
for inputs in randn wide; do
  for P in "MODULI=7 -p SCALE=1" "MODULI=8" "MODULI=7" "MODULI=8 -p SCALE=1"; do
    name="wg$(echo "$P" | tr -d ' =-' | sed 's/MODULI/T/; s/pSCALE1/n/')-$inputs"
    step "ozakiwg -p $P, $inputs"
    timeout 240 python3 benchmarks/precision_vs_cublas.py --family ozakiwg -p $P --inputs "$inputs" \
      --shapes "${SHAPES:-4096,8192}" --out "$OUT/$name.json" 2>&1 | tail -4 | tee -a "$LOG"
  done
done
for P in "MODULI=7 -p SCALE=1" "MODULI=8"; do  # the issue's larger shape, randn
  step "ozakiwg -p $P, randn, 16384"
  timeout 240 python3 benchmarks/precision_vs_cublas.py --family ozakiwg -p $P --inputs randn --shapes 16384 \
    --out "$OUT/wg$(echo "$P" | tr -d ' =-' | sed 's/MODULI/T/; s/pSCALE1/n/')-randn-16384.json" 2>&1 | tail -3 | tee -a "$LOG"
done
step "autotune search --M 8192 --precision fp32-tc"
( time timeout 300 $AT search --M 8192 --precision fp32-tc --db "$OUT/tc8192.sqlite" ) 2>&1 | tail -12 | tee -a "$LOG"
step "done"
