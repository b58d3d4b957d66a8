#!/usr/bin/env bash
# Issue 15's GPU evidence in one call, from the repository root with OUT set: the wgmma lab (PIPE=1
# beside PIPE=0), the GPU tests, the tf32x3wg default against cuBLAS SGEMM in speed and accuracy
# (benchmarks/precision_vs_cublas.py: the file the issue names), and the default fp32-tc search.
# Logs and databases land in $OUT (log.txt has the numbers, tf32x3wg.tgz the rest).
source benchmarks/release/common.sh

step "wgmma lab"
timeout 200 python3 benchmarks/profiling/wgmma_lab.py --out "$WORK/wgmma-lab.json" 2>&1 | tee -a "$LOG"

step "GPU tests"
timeout "${GPU_TESTS_S:-300}" python3 -m pytest -m gpu -p no:cacheprovider --timeout 90 tests >"$WORK/gpu_tests.txt" 2>&1
grep -E "passed|failed|FAILED|error" "$WORK/gpu_tests.txt" | tail -15 | tee -a "$LOG"

step "tf32x3wg default against cuBLAS SGEMM"
timeout 150 python3 benchmarks/precision_vs_cublas.py --family tf32x3wg --out "$WORK/tf32x3-h200.json" 2>&1 | tee -a "$LOG"
for P in "PIPE=1" "BN=192 -p STAGES=2"; do
  timeout 100 python3 benchmarks/precision_vs_cublas.py --family tf32x3wg -p $P --shapes 4096 2>&1 | tee -a "$LOG"
done

fp32_tc_search
step "done"
tar czf "$OUT/tf32x3wg.tgz" -C "$WORK" .
