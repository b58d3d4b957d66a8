#!/usr/bin/env bash
# Issue 13: the shape suite with one stated budget (TRIALS new trials and at most TIMEOUT seconds per
# shape, TOTAL for the whole suite) on a fresh database, or on a copy of START_DB (an earlier pass:
# its rows count, and its bests are the shape-aware starts); outputs in $OUT (shape-suite-<device>.json,
# .md, .png), the database as $OUT/suite.sqlite, GPU tests first unless NO_TESTS. From the repository
# root with OUT set:
#   TRIALS=16 TIMEOUT=15 TOTAL=420 [START_DB=earlier.sqlite] [REMEASURE=stale] OUT=out bash benchmarks/release/suite_check.sh
# (REMEASURE=stale after a template changed: each shape measures today's source of its recorded bests first)
source benchmarks/release/common.sh
TRIALS="${TRIALS:-16}"; TIMEOUT="${TIMEOUT:-15}"; TOTAL="${TOTAL:-420}"
[ -z "$NO_TESTS" ] && gpu_tests
[ -n "$START_DB" ] && cp "$START_DB" "$OUT/suite.sqlite"
suite_pass
step "done"
tar czf "$OUT/suite.tgz" -C "$WORK" .
