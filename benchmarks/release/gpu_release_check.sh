#!/usr/bin/env bash
# A release check on the GPU (the steps earlier checks ran from
# final.sh and final2.sh, kept in git history): the GPU tests, the
# README's main job on a fresh database, best, export and re-time, the default blocked config
# at the other shapes, and short blocked searches at 2048^3 and 8192^3.
set -o pipefail
OUT="${OUT:-out}"; mkdir -p "$OUT"
source benchmarks/device_setup.sh || { echo "setup failed"; exit 1; }
DB="$OUT/autotune.sqlite"; LOG="$OUT/log.txt"
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.max.sm --format=csv,noheader | tee "$LOG"
python3 -m pytest -m gpu -q tests 2>&1 | tail -3 | tee -a "$LOG"
( time autotune search --M 4096 --trials 60 --timeout 200 --db "$DB" ) 2>"$OUT/search_progress.txt" | tee -a "$LOG"
grep real "$OUT/search_progress.txt" >> "$LOG"
autotune best --M 4096 --db "$DB" | tee -a "$LOG"
autotune export --M 4096 --db "$DB" -o "$OUT/best.cu" >> "$LOG"
python3 benchmarks/retime_export.py "$OUT/best.cu" | tee -a "$LOG"
for shape in "--M 2048" "--M 8192" "--M 4000" "--M 4097 --N 4095 --K 4093" "--M 1 --N 4096 --K 4096"; do
  autotune measure $shape --db "$DB" --family blocked 2>&1 | grep -v "no SASS" | tee -a "$LOG"
done
for M in ${SEARCH_SIZES:-2048 8192}; do
  ( time autotune search --M "$M" --family blocked --trials "${SIZE_TRIALS:-25}" --timeout 150 --db "$DB" ) \
    2>>"$OUT/search_progress.txt" | tail -4 | tee -a "$LOG"
  autotune best --M "$M" --db "$DB" | tee -a "$LOG"
done
python3 benchmarks/trial_breakdown.py "$DB" "$LOG" 2>&1 | tail -16
