#!/usr/bin/env bash
# autotune.load() against torch.matmul at shapes nobody tuned one by one (benchmarks/anyshape.py), in one call:
# first after `autotune cover` of the 40 random shapes of seed 1 and the 8 projections, within BUDGET seconds and
# TRIALS trials a product (anyshape.py --cover --forced: where cuBLAS runs beside a kernel measured there, that
# kernel timed too; the database tarred into $OUT), then through the shipped database
# alone at the random shapes of SEED2 (default 2; none: not), which nothing was covered at. JSONs in $OUT.
# COVER_DB=path: no new cover; the first part reads that database (one an earlier run tarred) beside the shipped one.
# From the repository root with OUT set:
#   OUT=out bash benchmarks/release/anyshape_check.sh
source benchmarks/release/common.sh
SEED1=(--seed 1 --count 40 --forced --commit "$COMMIT" -o "$OUT/anyshape-covered-$TAG.json")
if [ -n "${COVER_DB:-}" ]; then  # a cover made before (its database carried here): load() reads it, no new cover
  step "anyshape through $COVER_DB and the shipped database (seed 1)"
  AUTOTUNE_DB="$COVER_DB" timeout 300 python3 benchmarks/anyshape.py "${SEED1[@]}" >"$WORK/covered.log" 2>&1
else
  step "anyshape after cover (seed 1, ${BUDGET:=330} s, ${TRIALS:=12} trials a product)"
  timeout "$((BUDGET + 150))" python3 benchmarks/anyshape.py "${SEED1[@]}" --cover "$BUDGET" --cover-trials "$TRIALS" \
    --cover-db "$WORK/cover.sqlite" >"$WORK/covered.log" 2>&1
fi
echo "rc $?" | tee -a "$LOG"
grep -v "it/s\]\|s/it\]" "$WORK/covered.log" | tail -75 | tee -a "$LOG"
if [ "${SEED2:=2}" != none ]; then
  step "anyshape through the shipped database (seed $SEED2)"
  timeout 150 python3 benchmarks/anyshape.py --seed "$SEED2" --count 40 --commit "$COMMIT" \
    -o "$OUT/anyshape-seed$SEED2-$TAG.json" >"$WORK/seed.log" 2>&1
  echo "rc $?" | tee -a "$LOG"
  tail -60 "$WORK/seed.log" | tee -a "$LOG"
fi
tar czf "$OUT/work.tgz" -C "$WORK" .
step "done"
