#!/usr/bin/env bash
# One call on the H200: all GPU tests (faults included), the ladder for the report, the default
# search, the blocked winner at odd shapes and at 2048/8192, export and re-time.
set -o pipefail
OUT="${OUT:-out}"; mkdir -p "$OUT"
source benchmarks/device_setup.sh || { echo "setup failed"; exit 1; }
DB="$OUT/autotune.sqlite"; LOG="$OUT/log.txt"
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.max.sm --format=csv,noheader | tee "$LOG"
timeout 200 python3 -m pytest -q -m gpu 2>&1 | tail -4 | tee -a "$LOG"
best="--family blocked -p BM=128 -p BN=256 -p BK=16 -p WM=32 -p WN=128 -p WNITER=2 -p TM=8 -p TN=4 -p GM=8"
for p in "--family naive -p x_over=rows" "--family naive -p x_over=cols" "--family tiled -p T=4" "--family tiled -p T=4 -p pad=1" \
         "--family tiled -p T=8" "--family tiled -p T=8 -p pad=1" "--family tiled -p T=16" "--family tiled -p T=16 -p pad=1" \
         "--family tiled -p T=32" "--family tiled -p T=32 -p pad=1" "$best"; do
  autotune measure --M 4096 --db "$DB" $p 2>&1 | grep -v "no SASS" >> "$LOG"
done
( time autotune search --M 4096 --trials 60 --timeout 200 --db "$DB" ) 2>"$OUT/search_progress.txt" | tee -a "$LOG"
grep real "$OUT/search_progress.txt" >> "$LOG"
autotune best --M 4096 --db "$DB" | tee -a "$LOG"
autotune export --M 4096 --db "$DB" -o "$OUT/best.cu" >> "$LOG"
python3 benchmarks/retime_export.py "$OUT/best.cu" | tee -a "$LOG"
for shape in "--M 4000" "--M 4097 --N 4095 --K 4093" "--M 1 --N 4096 --K 4096" "--M 2048" "--M 8192"; do
  autotune measure $shape --db "$DB" $best 2>&1 | grep -v "no SASS" | tee -a "$LOG"
done
autotune search --M 2048 --family blocked --trials 30 --timeout 60 --db "$DB" 2>/dev/null | tail -4 | tee -a "$LOG"
