#!/usr/bin/env bash
# Issue 13, item 6, on a two-GPU host (kind nvidia-h200-x2): the default search's new measurements per second
# on one GPU and on two (benchmarks/scaling.sh, TRIALS trials at M^3, fresh databases and compile caches), then
# the shape suite's tuning time on one GPU and on two, each pass on its own copy of START_DB (an earlier pass's
# database, gzipped or not) with the same budget. From the repository root with OUT set:
#   START_DB=benchmarks/data/h200-suite.sqlite.gz OUT=out bash benchmarks/release/two_gpu_check.sh
[ -n "$START_DB" ] || { echo "set START_DB to an earlier suite database, e.g. benchmarks/data/h200-suite.sqlite.gz"; exit 2; }
source benchmarks/release/common.sh
TRIALS="${TRIALS:-120}"; M="${M:-4096}"
mkdir -p "$OUT/scaling"
step "scaling.sh ($TRIALS trials at $M^3, --devices 0 against 0,1)"
DEVICES=0,1 TRIALS="$TRIALS" M="$M" OUT="$OUT/scaling" bash benchmarks/scaling.sh 2>&1 | tee -a "$LOG"
for devs in 0 0,1; do
  mkdir -p "$OUT/suite-$devs"
  case "$START_DB" in *.gz) zcat "$START_DB" ;; *) cat "$START_DB" ;; esac > "$WORK/suite-$devs.sqlite"
  step "suite --devices $devs (8 trials, 8 s per shape, 210 s in all)"
  ( time timeout 330 $AT suite --shapes autotune/api/shapes.toml --trials 8 --timeout 8 --total-timeout 210 \
      --devices "$devs" --db "$WORK/suite-$devs.sqlite" --out "$OUT/suite-$devs" ) > "$OUT/suite-$devs-log.txt" 2>&1
  grep -E "geometric|worst|tuned|real" "$OUT/suite-$devs-log.txt" | tee -a "$LOG"
done
step "done"
