#!/usr/bin/env bash
# SCALE=1 (each row and column scaled by its norm, ozaki_math.norm_shifts) on the GPU. One call (about five
# minutes): the ozaki GPU tests, then ozakiwg with 7 moduli scaled by the norm beside 8 and 7 by the largest value
# (and 8 by the norm), randn and wide inputs, at 4096³ and 8192³ (16384³ too for the first two, randn): speed and
# error against cuBLAS SGEMM (benchmarks/precision_vs_cublas.py), a file each into $OUT for benchmarks/ozaki_collect.py.
# With SEARCH=1, instead, the default fp32-tc search at 8192 on a fresh database (does it find SCALE=1?).
# With TILES=1, instead, the product's tiles at 8192³, 7 moduli scaled by the norm, in one process beside its cuBLAS
# (about four minutes): BN=128 and BN=256 with WS=1, and two blocks an SM (MINB=2), then at 4096³
# beside tf32x3wg, into $OUT/tiles.sqlite (autotune best / report read it).
# From the repository root with OUT set:
#   OUT=out bash benchmarks/release/ozaki_norm_check.sh
#   OUT=out SEARCH=1 bash benchmarks/release/ozaki_norm_check.sh
#   OUT=out TILES=1 bash benchmarks/release/ozaki_norm_check.sh
# The scaling is named in every run (SCALE=0: by the largest value; the family's default is the norm).
# TILE names the product's tile for the first (plain) run, e.g. the fastest of TILES=1 (default: the family's):
#   OUT=out TILE="BN=256 STAGES=4" bash benchmarks/release/ozaki_norm_check.sh
source benchmarks/release/common.sh
tag() { echo "wg$(echo "$1" | tr -d ' =-' | sed 's/MODULI/T/; s/pSCALE1/n/; s/pSCALE0//')"; }  # "MODULI=7 -p SCALE=1" -> wgT7n
if [ -n "${SEARCH:-}" ]; then
  step "autotune search --M 8192 --precision fp32-tc"
  ( time timeout 480 $AT search --M 8192 --precision fp32-tc --db "$OUT/tc8192.sqlite" ) 2>&1 | tail -12 | tee -a "$LOG"
  step "done"
  exit 0
fi
if [ -n "${TILES:-}" ]; then
  step "ozakiwg tiles at 8192³, MODULI=7 SCALE=1"
  T7n=(MODULI=7 SCALE=1)
  family_measure ozakiwg "$OUT/tiles.sqlite" 8192x8192x8192 "${T7n[@]}" BN=128 STAGES=4,6
  family_measure ozakiwg "$OUT/tiles.sqlite" 8192x8192x8192 "${T7n[@]}" BN=256 STAGES=3,4
  family_measure ozakiwg "$OUT/tiles.sqlite" 8192x8192x8192 "${T7n[@]}" BN=64 WS=0,1 STAGES=3,4 MINB=2
  family_measure ozakiwg "$OUT/tiles.sqlite" 8192x8192x8192 "${T7n[@]}" BN=128 WS=0 STAGES=3 MINB=1,2
  step "4096³: the same against tf32x3wg (issue 46: faster than it under the same contract)"
  family_measure ozakiwg "$OUT/tiles.sqlite" 4096x4096x4096 "${T7n[@]}" BN=128,256 STAGES=4
  family_measure ozakiwg "$OUT/tiles.sqlite" 4096x4096x4096 "${T7n[@]}" BN=128 WS=0 STAGES=3 MINB=2
  family_measure tf32x3wg "$OUT/tiles.sqlite" 4096x4096x4096
  step "done"
  exit 0
fi
TILE_ARGS=(); for kv in ${TILE:-}; do TILE_ARGS+=(-p "$kv"); done
TESTS="${TESTS:-tests/test_gpu_ozaki.py}" gpu_tests
for inputs in randn wide; do
  for P in "MODULI=7 -p SCALE=1" "MODULI=8 -p SCALE=0" "MODULI=7 -p SCALE=0" "MODULI=8 -p SCALE=1"; do
    step "ozakiwg -p $P, $inputs"
    timeout 240 python3 benchmarks/precision_vs_cublas.py --family ozakiwg -p $P "${TILE_ARGS[@]}" --inputs "$inputs" \
      --shapes 4096,8192 --out "$OUT/$(tag "$P")-$inputs.json" 2>&1 | tail -4 | tee -a "$LOG"
  done
done
for P in "MODULI=7 -p SCALE=1" "MODULI=8 -p SCALE=0"; do
  step "ozakiwg -p $P, randn, 16384"
  timeout 240 python3 benchmarks/precision_vs_cublas.py --family ozakiwg -p $P "${TILE_ARGS[@]}" --inputs randn --shapes 16384 \
    --out "$OUT/$(tag "$P")-randn-16384.json" 2>&1 | tail -3 | tee -a "$LOG"
done
step "done"
