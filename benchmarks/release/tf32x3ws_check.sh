#!/usr/bin/env bash
# Issue 15, warp specialization (tf32x3wg WS=1): configs of the family against cuBLAS SGEMM at the
# issue's shapes (benchmarks/precision_vs_cublas.py, one process per config; the first config's file is
# also $OUT/tf32x3-h200.json), GPU tests (TESTS: the tensor-core families' files unless set), and the
# default fp32-tc search. From the repository root with OUT set; numbers in $OUT/log.txt.
#   CONFIGS="WS=1,BN=128,STAGES=3 WS=0" SHAPES=4096,8192 TESTS=tests OUT=out bash benchmarks/release/tf32x3ws_check.sh
source benchmarks/release/common.sh
CONFIGS="${CONFIGS:-WS=1,BN=128,STAGES=3 WS=1,BN=192,STAGES=2 WS=1,BN=64,STAGES=4 WS=1,BN=128,STAGES=2 WS=0 WS=0,BN=64,STAGES=2}"
SHAPES="${SHAPES:-4096,8192}"
TESTS="${TESTS:-tests/test_gpu_launchers.py tests/test_gpu_api.py tests/test_gpu_accuracy.py}"

step "tf32x3wg configs at $SHAPES"
for C in $CONFIGS; do
  echo "-- $C" | tee -a "$LOG"
  args=(); for kv in ${C//,/ }; do args+=(-p "$kv"); done
  timeout 120 python3 benchmarks/precision_vs_cublas.py --family tf32x3wg "${args[@]}" --shapes "$SHAPES" \
    --out "$WORK/precision-${C//[=,]/_}.json" 2>&1 | tee -a "$LOG"
  [ -f "$OUT/tf32x3-h200.json" ] || cp "$WORK/precision-${C//[=,]/_}.json" "$OUT/tf32x3-h200.json" 2>/dev/null
done

if [ -z "$NO_TESTS" ]; then
  step "GPU tests: $TESTS"
  timeout 300 python3 -m pytest -m gpu -p no:cacheprovider --timeout 90 $TESTS >"$WORK/gpu_tests.txt" 2>&1
  grep -E "passed|failed|FAILED|Error" "$WORK/gpu_tests.txt" | tail -15 | tee -a "$LOG"
fi

if [ -z "$NO_SEARCH" ]; then
  fp32_tc_search
fi
step "done"
tar czf "$OUT/tf32x3ws.tgz" -C "$WORK" .
