#!/usr/bin/env bash
# Issue 7 throughput: a default search at 4096^3 (compile-ahead on a pool of processes, verify on
# the GPU), then its wall time per new trial and where each new trial's time went (render,
# compile-wait, compile, verify, time, clock, explain-wait) from the rows it wrote.
#   JOBS="default 14" bash benchmarks/throughput.sh   # one search per --compile-jobs value
# Each search gets a fresh database and a cold cubin cache, so every compile is real.
set -o pipefail
OUT="${OUT:-out}"; mkdir -p "$OUT"
source benchmarks/device_setup.sh || { echo "setup failed"; exit 1; }
echo "cores: $(nproc)"
timeout 150 python3 -m pytest -q -m gpu tests/test_gpu.py tests/test_gpu_compare.py 2>&1 | tail -3
for jobs in ${JOBS:-default}; do
  DB="$OUT/throughput-jobs-$jobs.sqlite"; LOG="$OUT/search-jobs-$jobs.log"
  option=(); [ "$jobs" != default ] && option=(--compile-jobs "$jobs")
  export AUTOTUNE_CACHE="/tmp/autotune-cache-jobs-$jobs"; rm -rf "$AUTOTUNE_CACHE"
  echo "== autotune search --M 4096 --trials ${TRIALS:-40} ${option[*]}"
  ( time autotune search --M 4096 --trials "${TRIALS:-40}" --timeout 150 --db "$DB" "${option[@]}" ) 2>&1 \
    | grep -v "no SASS" | tee "$LOG" | tail -7
  python3 benchmarks/trial_breakdown.py "$DB" "$LOG"
done
