#!/usr/bin/env bash
# Issue 7 ground truth: every valid naive and tiled config at 4096^3 and 2048^3 (the grid
# sampler walks the whole space), then a uniform random sample of the blocked space at 4096^3
# for whatever time is left. Each database is a dataset the replay benchmark reads. Run again
# with the same databases to finish a sweep that ran out of time (nothing is measured twice).
#   DEVICES=0,1  T4096=300 T2048=90 TB=90 (seconds per phase)
set -o pipefail
OUT="${OUT:-out}"; mkdir -p "$OUT"
source benchmarks/device_setup.sh || { echo "setup failed"; exit 1; }
DEV=(--devices "${DEVICES:-0}")
{ date -u; nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.max.sm,power.limit --format=csv; } \
  > "$OUT/device.txt"; cat "$OUT/device.txt"
for M in 4096 2048; do
  limit="T$M"
  ( time autotune search --M $M --family naive,tiled --sampler grid --trials 100000 --timeout "${!limit:-200}" \
      "${DEV[@]}" --db "$OUT/h200-gt-naive-tiled-$M.sqlite" ) 2>&1 | grep -v "no SASS" | tail -7
done
( time autotune search --M 4096 --family blocked --sampler random --trials 100000 --timeout "${TB:-90}" \
    "${DEV[@]}" --db "$OUT/h200-gt-blocked-4096.sqlite" ) 2>&1 | grep -v "no SASS" | tail -7
for db in "$OUT"/h200-gt-*.sqlite; do
  sqlite3 "$db" "select '$(basename "$db")', status, count(*) from results group by status" 2>/dev/null \
    || python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); print(sys.argv[1], c.execute('select status, count(*) from results group by status').fetchall())" "$db"
done
gzip -9 -n -k "$OUT"/h200-gt-*.sqlite  # benchmarks/data keeps datasets gzip'd; they are read as they are
