#!/usr/bin/env bash
# Issue 5: cp.async stages on the H200, then a blocked search seeded with the best configs so far.
set -o pipefail
OUT="${OUT:-out}"; mkdir -p "$OUT"
source benchmarks/device_setup.sh || { echo "setup failed"; exit 1; }
DB="$OUT/autotune.sqlite"
python3 -m pytest -q -m gpu -x 2>&1 | tail -3 | tee "$OUT/log.txt" || exit 1
best="-p BM=128 -p BN=256 -p BK=16 -p WM=32 -p WN=128 -p WNITER=2 -p TM=8 -p TN=4 -p GM=8"
for p in "$best" "$best -p ASYNC=1 -p STAGES=3" "$best -p ASYNC=1 -p STAGES=4" "$best -p ASYNC=1 -p STAGES=3 -p BK=8" \
         "-p ASYNC=1 -p STAGES=3" "-p ASYNC=1 -p STAGES=4 -p BK=8" "-p ASYNC=1 -p STAGES=3 -p MINB=2" \
         "$best -p ASYNC=1 -p STAGES=2"; do
  autotune measure --M 4096 --db "$DB" --family blocked $p 2>&1 | grep -v "no SASS" | tee -a "$OUT/log.txt"
done
autotune search --M 4096 --family blocked --trials "${TRIALS:-70}" --timeout 220 --seed 3 --db "$DB" 2>"$OUT/search_progress.txt" | tee -a "$OUT/log.txt"
