#!/usr/bin/env bash
# Issue 13: the shape suite on a fresh database with one stated budget (TRIALS new trials and at most
# TIMEOUT seconds per shape, TOTAL for the whole suite), outputs in $OUT (shape-suite-<device>.json,
# .md, .png) and the database as $OUT/suite.sqlite. From the repository root with OUT set:
#   TRIALS=16 TIMEOUT=15 TOTAL=420 OUT=out bash benchmarks/release/suite_check.sh
source benchmarks/release/common.sh
TRIALS="${TRIALS:-16}"; TIMEOUT="${TIMEOUT:-15}"; TOTAL="${TOTAL:-420}"
step "autotune suite --trials $TRIALS --timeout $TIMEOUT --total-timeout $TOTAL"
( time timeout $((TOTAL + 120)) $AT suite --shapes benchmarks/shapes.toml --trials "$TRIALS" --timeout "$TIMEOUT" \
    --total-timeout "$TOTAL" --db "$OUT/suite.sqlite" --out "$OUT" ) >"$WORK/suite-log.txt" 2>&1
grep -v "^autotune: suite: .*new trials" "$WORK/suite-log.txt" | grep -v "it/s\]\|s/it\]" | tail -40 | tee -a "$LOG"
step "done"
tar czf "$OUT/suite.tgz" -C "$WORK" .
