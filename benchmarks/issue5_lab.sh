#!/usr/bin/env bash
# Issue 5 lab: template variants side by side (benchmarks/kernel_lab.py), then Nsight Compute
# on cuBLAS and the best variant (stall reasons, issue rates, launch shape of cuBLAS's kernel).
set -o pipefail
OUT="${OUT:-out}"; mkdir -p "$OUT"
source benchmarks/device_setup.sh || { echo "setup failed"; exit 1; }
LAB="${LAB:-benchmarks/lab1.json}"
python3 benchmarks/kernel_lab.py --M 4096 --rounds 2 "$LAB" 2>&1 | tee "$OUT/lab.txt" | tail -20
timeout 200 ncu --clock-control none --section SpeedOfLight --section WarpStateStats --section SchedulerStats \
  --section Occupancy --section LaunchStats --section InstructionStats --launch-skip 2 --launch-count 1 \
  -k regex:'gemm' python3 benchmarks/ncu_pair.py benchmarks/lab_best_split.json > "$OUT/ncu_cublas.txt" 2>&1
echo "ncu cublas rc=$?"
timeout 200 ncu --clock-control none --section SpeedOfLight --section WarpStateStats --section SchedulerStats \
  --section Occupancy --section LaunchStats --section InstructionStats --launch-skip 1 --launch-count 1 \
  -k regex:'sgemm_blocked' python3 benchmarks/ncu_pair.py benchmarks/lab_best_split.json > "$OUT/ncu_best.txt" 2>&1
echo "ncu best rc=$?"
grep -E "^  [a-z_0-9]+.*\(|Duration|Registers Per|Block Size|Grid Size|Shared Memory Config|Dynamic Shared|Achieved Occ|Issued Warp|No Eligible|Eligible Warps|Warp Cycles Per Issued|Active Warps Per" "$OUT/ncu_cublas.txt" | head -30
