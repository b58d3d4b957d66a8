#!/usr/bin/env bash
# Per-instruction SASS with Nsight Compute's warp-state samples (source page), for lab
# variants (VARIANTS="a.json b.json", default benchmarks/profiling/lab_best.json) and for cuBLAS's SGEMM kernel, to see which instructions stall.
set -o pipefail
OUT="${OUT:-out}"; mkdir -p "$OUT"
source benchmarks/device_setup.sh || { echo "setup failed"; exit 1; }
SEC="--section WarpStateStats --section SourceCounters --page source --print-source sass --csv"
for v in ${VARIANTS:-benchmarks/profiling/lab_best.json}; do
  name=$(basename "$v" .json)
  timeout 200 ncu --clock-control none $SEC --launch-skip 1 --launch-count 1 -k regex:'sgemm_blocked' \
    python3 benchmarks/profiling/ncu_pair.py "$v" > "$OUT/src_$name.csv" 2>"$OUT/src_$name.err"; echo "ncu $name rc=$? $(wc -l < "$OUT/src_$name.csv") lines"
done
timeout 200 ncu --clock-control none $SEC --launch-skip 2 --launch-count 1 -k regex:'xmma|sgemm_' \
  python3 benchmarks/profiling/ncu_pair.py benchmarks/profiling/lab_best.json > "$OUT/src_cublas.csv" 2>"$OUT/src_cublas.err"; echo "ncu cublas rc=$? $(wc -l < "$OUT/src_cublas.csv") lines"
head -c 3000 "$OUT/src_cublas.csv"
