#!/usr/bin/env bash
# Register-blocked family on the H200: GPU tests, hand-picked configs, a short blocked-only search.
set -o pipefail
OUT="${OUT:-out}"; mkdir -p "$OUT"
source benchmarks/device_setup.sh || { echo "setup failed"; exit 1; }
DB="$OUT/autotune.sqlite"
python3 -m pytest -q -m gpu -x 2>&1 | tail -5 | tee "$OUT/log.txt" || exit 1
for p in "" "-p WNITER=4" "-p STAGES=1" "-p BK=8 -p WN=32 -p WNITER=1" "-p BN=256" "-p BM=64 -p WM=32 -p TM=4" \
         "-p BK=32" "-p MINB=2" "-p GM=1"; do
  autotune measure --M 4096 --db "$DB" --family blocked $p 2>&1 | tee -a "$OUT/log.txt"
done
for p in "-p T=16" "-p T=32" "-p T=32 -p pad=1"; do
  autotune measure --M 4096 --db "$DB" --family tiled $p 2>&1 | tee -a "$OUT/log.txt"
done
autotune search --M 4096 --family blocked --trials "${TRIALS:-40}" --timeout 200 --db "$DB" 2>"$OUT/search_progress.txt" | tee -a "$OUT/log.txt"
