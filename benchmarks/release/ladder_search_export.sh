#!/usr/bin/env bash
# Issue 2 on the H200: tests, the naive+tiled search at 4096^3, the ladder, best, export, re-time.
# Run from the repository root with OUT set (logs and the database land there).
set -o pipefail
OUT="${OUT:-out}"; mkdir -p "$OUT"
source benchmarks/device_setup.sh || { echo "setup failed"; exit 1; }
DB="$OUT/autotune.sqlite"
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
python3 -m pytest -q -m gpu -x 2>&1 | tee "$OUT/pytest_gpu.log" || exit 1
python3 -m pytest -q -m "not gpu" 2>&1 | tail -30 | tee "$OUT/pytest_cpu.log"
time autotune search --M 4096 --trials "${TRIALS:-60}" --timeout 300 --db "$DB" 2>&1 | tee "$OUT/search.log"
for p in "naive -p x_over=cols" "naive -p x_over=rows" "tiled -p T=8" "tiled -p T=16" "tiled -p T=32" \
         "tiled -p T=32 -p pad=1" "tiled -p T=16 -p pad=1"; do
  autotune measure --M 4096 --db "$DB" --family $p 2>&1 | tee -a "$OUT/ladder.log"
done
autotune best --M 4096 --db "$DB" | tee "$OUT/best.txt"
autotune export --M 4096 --db "$DB" -o "$OUT/best.cu"
python3 benchmarks/retime_export.py "$OUT/best.cu" | tee "$OUT/retime.txt"
python3 benchmarks/retime_export.py "$OUT/best.cu" | tee -a "$OUT/retime.txt"
