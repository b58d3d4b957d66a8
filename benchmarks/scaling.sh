#!/usr/bin/env bash
# One GPU against several: the same search (default families, --trials TRIALS at M^3) into fresh
# databases on --devices 0 and on --devices DEVICES; each run's summary line, and where its new
# trials spent their time (benchmarks/trial_breakdown.py). New measurements per second is
# "new measurements" / "s" of the summary line (the search loop's own wall time).
#
#   DEVICES=0,1 TRIALS=120 M=4096 OUT=folder bash benchmarks/scaling.sh
set -u
trials=${TRIALS:-120}; M=${M:-4096}; devices=${DEVICES:-0,1}; out=${OUT:-.}
for devs in 0 "$devices"; do
  tag=$(echo "$devs" | tr , -)
  db="$out/scaling-$M-gpus-$tag.sqlite"
  rm -f "$db" "$db-wal" "$db-shm"
  echo "== --devices $devs"
  start=$(date +%s.%N)
  timeout 600 python3 -m autotune.cli search --M "$M" --trials "$trials" --devices "$devs" --db "$db" \
    > "$out/scaling-$M-gpus-$tag.log" 2>&1
  end=$(date +%s.%N)
  grep -E "new measurements|error" "$out/scaling-$M-gpus-$tag.log" | tail -3
  echo "command wall (start-up included): $(python3 -c "print(round($end - $start, 1))") s"
  python3 benchmarks/trial_breakdown.py "$db" "$out/scaling-$M-gpus-$tag.log"
done
