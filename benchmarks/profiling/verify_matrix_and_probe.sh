#!/usr/bin/env bash
# Issue 3 GPU verify matrix + issue 5 blocked probe: hand-picked configs, a blocked search, ncu of the best.
set -o pipefail
OUT="${OUT:-out}"; mkdir -p "$OUT"
source benchmarks/device_setup.sh || { echo "setup failed"; exit 1; }
DB="$OUT/autotune.sqlite"
autotune verify --backend cuda --limit 12 --json > "$OUT/verify_cuda.json"; echo "verify cuda rc=$?"
for p in "-p BN=256 -p pad=0 -p GM=1" "-p BK=8 -p WM=32 -p WNITER=2 -p TM=4 -p TN=4" \
         "-p BK=8 -p WM=32 -p WNITER=2 -p TM=4 -p TN=4 -p MINB=2" "-p BN=256 -p BK=8 -p WM=32 -p WN=128 -p WNITER=4 -p TM=4 -p TN=4" \
         "-p BM=256 -p BN=128 -p BK=8 -p WM=64 -p WN=64 -p WNITER=2 -p TM=8 -p TN=4"; do
  autotune measure --M 4096 --db "$DB" --family blocked $p 2>&1 | tee -a "$OUT/log.txt"
done
autotune search --M 4096 --family blocked --trials "${TRIALS:-80}" --timeout 240 --db "$DB" 2>"$OUT/search_progress.txt" | tee -a "$OUT/log.txt"
autotune export --M 4096 --db "$DB" -o "$OUT/best.cu"
timeout 120 ncu --clock-control none --section SpeedOfLight --section WarpStateStats --section Occupancy \
  --section LaunchStats -k regex:sgemm_blocked --launch-skip 2 --launch-count 1 \
  python3 benchmarks/retime_export.py "$OUT/best.cu" > "$OUT/ncu.txt" 2>&1; echo "ncu rc=$?"
grep -E "Duration|Throughput|Stall|Warp Cycles|Occupancy|Registers|Issued|Eligible|Active Warps" "$OUT/ncu.txt" | head -40
