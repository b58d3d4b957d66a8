#!/usr/bin/env bash
# The GPU check after a change: every GPU test, the README's main job twice on fresh databases
# (same-process % of cuBLAS), best / export / re-time of the winner, and short searches of the
# split-K and skinny families at the shapes they are for. Run from the repository root with OUT set.
set -o pipefail
OUT="${OUT:-out}"; mkdir -p "$OUT"
source benchmarks/device_setup.sh >/dev/null 2>&1 || { echo "setup failed"; exit 1; }
LOG="$OUT/log.txt"
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.max.sm --format=csv,noheader | tee "$LOG"
python3 -m pytest -m gpu -v -p no:cacheprovider --timeout 60 tests > "$OUT/gpu_tests.txt" 2>&1; tail -3 "$OUT/gpu_tests.txt" | tee -a "$LOG"
for run in 1 2; do
  ( time autotune search --M 4096 --trials 60 --timeout 200 --db "$OUT/main$run.sqlite" ) \
    2>"$OUT/progress$run.txt" | head -3 | tee -a "$LOG"
  grep real "$OUT/progress$run.txt" | tee -a "$LOG"
  autotune best --M 4096 --db "$OUT/main$run.sqlite" | tee -a "$LOG"
done
autotune export --M 4096 --db "$OUT/main1.sqlite" -o "$OUT/best.cu" | tee -a "$LOG"
python3 benchmarks/retime_export.py "$OUT/best.cu" | tee -a "$LOG"
for args in "--M 16 --N 8192 --K 8192 --family skinny,blocked" "--M 1024 --N 1024 --K 65536 --family splitk,blocked"; do
  autotune search $args --trials "${KIND_TRIALS:-16}" --timeout 60 --db "$OUT/kinds.sqlite" 2>/dev/null | sed -n '1,3p;6,8p' | tee -a "$LOG"
done
