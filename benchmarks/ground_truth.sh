#!/usr/bin/env bash
# Issue 7 ground truth on one GPU: every valid naive and tiled config at 4096^3 and 2048^3
# (the grid sampler walks the whole space), then a uniform random sample of the blocked space
# at 4096^3 for whatever time is left. Each database is the dataset the replay benchmark reads.
#   TN=seconds for each naive+tiled sweep, TB=seconds for the blocked sample
set -o pipefail
OUT="${OUT:-out}"; mkdir -p "$OUT"
source benchmarks/device_setup.sh || { echo "setup failed"; exit 1; }
{ date -u; nvidia-smi --query-gpu=name,uuid,driver_version,clocks.max.sm,clocks.sm,power.limit --format=csv; } > "$OUT/device.txt"
for M in 4096 2048; do
  ( time autotune search --M $M --family naive,tiled --sampler grid --trials 100000 --timeout "${TN:-240}" \
      --db "$OUT/h200-gt-naive-tiled-$M.sqlite" ) 2>&1 | grep -v "no SASS" | tail -6
done
( time autotune search --M 4096 --family blocked --sampler random --trials 100000 --timeout "${TB:-120}" \
    --db "$OUT/h200-gt-blocked-4096.sqlite" ) 2>&1 | grep -v "no SASS" | tail -6
python3 benchmarks/trial_breakdown.py "$OUT/h200-gt-naive-tiled-4096.sqlite" 2>&1 | tail -12
