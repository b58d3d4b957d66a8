#!/usr/bin/env bash
# Kernel lab: template variants side by side (benchmarks/profiling/kernel_lab.py), then Nsight Compute
# stall reasons on cuBLAS and on lab variants (NCU="file.json ..." picks them).
set -o pipefail
OUT="${OUT:-out}"; mkdir -p "$OUT"
source benchmarks/device_setup.sh || { echo "setup failed"; exit 1; }
LAB="${LAB:-benchmarks/profiling/lab_variants.json}"
python3 benchmarks/profiling/kernel_lab.py --M 4096 --rounds "${ROUNDS:-2}" "$LAB" 2>&1 | tee "$OUT/lab.txt" | tail -16
STALLS="--metrics regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,smsp__issue_active.avg.per_cycle_active,smsp__inst_executed.sum,smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"
for v in ${NCU:-benchmarks/profiling/lab_best.json benchmarks/profiling/lab_async.json}; do
  name=$(basename "$v" .json)
  timeout 150 ncu --clock-control none $STALLS --launch-skip 1 --launch-count 1 -k regex:'sgemm_blocked' \
    python3 benchmarks/profiling/ncu_pair.py "$v" > "$OUT/ncu_$name.txt" 2>&1; echo "ncu $name rc=$?"
done
timeout 150 ncu --clock-control none $STALLS --launch-skip 2 --launch-count 1 -k regex:'xmma|sgemm_' \
  python3 benchmarks/profiling/ncu_pair.py benchmarks/profiling/lab_best.json > "$OUT/ncu_cublas.txt" 2>&1; echo "ncu cublas rc=$?"
