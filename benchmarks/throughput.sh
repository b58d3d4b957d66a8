#!/usr/bin/env bash
# Issue 7 throughput: a short default search at 4096^3 with compile-ahead, then where each new
# trial's time went (render+claim, compile, verify, time, explain) from the rows it wrote.
set -o pipefail
OUT="${OUT:-out}"; mkdir -p "$OUT"
source benchmarks/device_setup.sh || { echo "setup failed"; exit 1; }
DB="$OUT/autotune.sqlite"
timeout 80 python3 -m pytest -q -m gpu tests/test_gpu.py 2>&1 | tail -2
( time autotune search --M 4096 --trials "${TRIALS:-40}" --timeout 100 --db "$DB" ) 2>&1 | grep -v "no SASS" | tail -8
python3 benchmarks/trial_breakdown.py "$DB"
