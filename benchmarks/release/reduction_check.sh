#!/usr/bin/env bash
# Issue 13, split-K's reductions: RED=0 (turnstiles), 1 (the last split sums the slots) and 2 (a tree
# of pairs) at the suite's split shapes, each `autotune measure` in one process with its cuBLAS; then
# the tensor-core family's default at every suite shape (benchmarks/precision_vs_cublas.py: the
# fp32-tc view of the suite), and the GPU tests (TESTS, unless NO_TESTS). From the repository root
# with OUT set; numbers in $OUT/log.txt, databases and logs in $OUT/reduction.tgz.
#   OUT=out bash benchmarks/release/reduction_check.sh
source benchmarks/release/common.sh
TESTS="${TESTS:-tests}"
DB="$WORK/red.sqlite"


step "split-K reductions"
splitk_measure "$DB" 256x256x262144 BN=128,256 SPLITK=64 RED=0,1,2
splitk_measure "$DB" 256x256x262144 BN=128 SPLITK=32 RED=1,2
splitk_measure "$DB" 256x256x262144 BM=64 WM=32 SPLITK=64 RED=1,2
splitk_measure "$DB" 1024x1024x65536 BN=256 SPLITK=4,8 RED=1,2
splitk_measure "$DB" 1024x1024x65536 BN=128 SPLITK=8 RED=0,1,2
splitk_measure "$DB" 64x8192x8192 BM=64 WM=32 SPLITK=4,8 RED=0,1,2
splitk_measure "$DB" 128x8192x8192 SPLITK=4 RED=0,1,2
splitk_measure "$DB" 8192x128x8192 SPLITK=4 RED=0,1,2
splitk_measure "$DB" 1024x1024x1024 SPLITK=4 RED=0,1,2
splitk_measure "$DB" 64x14336x4096 BM=64 WM=32 SPLITK=8 RED=0,1,2

if [ -z "$NO_TC" ]; then
  step "tf32x3wg's default at the suite's shapes"
  SHAPES=$(python3 -c "import tomllib; print(','.join('%dx%dx%d' % (s['M'], s['N'], s['K']) for s in tomllib.load(open('autotune/api/shapes.toml', 'rb'))['shapes']))")
  timeout 240 python3 benchmarks/precision_vs_cublas.py --family tf32x3wg --shapes "$SHAPES" \
    --out "$OUT/tf32x3wg-suite-shapes.json" 2>&1 | tee -a "$LOG"
fi

if [ -z "$NO_TESTS" ]; then
  step "GPU tests: $TESTS"
  timeout 240 python3 -m pytest -m gpu -p no:cacheprovider --timeout 90 $TESTS >"$WORK/gpu_tests.txt" 2>&1
  grep -E "passed|failed|FAILED|Error" "$WORK/gpu_tests.txt" | tail -15 | tee -a "$LOG"
fi
step "done"
cp "$DB" "$OUT/red.sqlite"
tar czf "$OUT/reduction.tgz" -C "$WORK" .
