#!/usr/bin/env bash
# Session 2's last call: finish the 4096^3 ground truth (GT=its database, resumed), then the
# README's main job on a fresh database (the default search), best, export and re-time, and
# the default blocked config (the best found) at the issue's other shapes.
set -o pipefail
OUT="${OUT:-out}"; mkdir -p "$OUT"
source benchmarks/device_setup.sh || { echo "setup failed"; exit 1; }
DB="$OUT/autotune.sqlite"; LOG="$OUT/log.txt"
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.max.sm --format=csv,noheader | tee "$LOG"
if [ -n "$GT" ]; then
  cp "$GT" "$OUT/" && gt="$OUT/$(basename "$GT")"
  autotune search --M 4096 --family naive,tiled --sampler grid --trials 100000 --timeout 120 --db "$gt" 2>/dev/null \
    | tail -3 | tee -a "$LOG"
fi
( time autotune search --M 4096 --trials 60 --timeout 200 --db "$DB" ) 2>"$OUT/search_progress.txt" | tee -a "$LOG"
grep real "$OUT/search_progress.txt" >> "$LOG"
autotune best --M 4096 --db "$DB" | tee -a "$LOG"
autotune export --M 4096 --db "$DB" -o "$OUT/best.cu" >> "$LOG"
python3 benchmarks/retime_export.py "$OUT/best.cu" | tee -a "$LOG"
for shape in "--M 2048" "--M 8192" "--M 4000" "--M 4097 --N 4095 --K 4093" "--M 1 --N 4096 --K 4096"; do
  autotune measure $shape --db "$DB" --family blocked 2>&1 | grep -v "no SASS" | tee -a "$LOG"
done
python3 benchmarks/trial_breakdown.py "$DB" "$LOG" 2>&1 | tail -16
