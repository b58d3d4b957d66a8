#!/usr/bin/env bash
# Rows at host-bound corners merged into the database the package ships for this GPU's model, and what that does
# through load() at random shapes nobody tuned, in one call:
#   1. benchmarks/small_corners.py over each of SHAPES (the budget shared), into one results database;
#   2. scripts/slim_database.py, then scripts/ship_database.py: the shipped database of this model
#      (autotune/store/tuned/<gpu>.sqlite) with the corners' winners merged, into $OUT/<gpu>.sqlite;
#   3. benchmarks/anyshape.py at each of SEEDS through the shipped databases, first as the package ships them,
#      then with the merged one installed in their place: before and after on the same lease.
# SHAPES by default: the small lattice on an H200 (none of its corners is shipped there yet); on an H100, whose
# shipped database holds the small lattice already, the three older lattices.
# FAMILIES=splitk: step 1 tries only these families' kernels (small_corners.py --families); an entry of SHAPES written
# file@families names its own (benchmarks/host-bound-tall-shapes.toml@tall). BUDGET (seconds, default 230) is shared
# among the files in proportion to their corners. PACK=1: the outputs
# (13 files with five seeds) end as one, $OUT/out.tgz: a device call brings back at most 8.
# CORNERS=file.sqlite.gz: no new corners; step 2 merges that database (one step 1 wrote before, such as
# benchmarks/data/h200-host-bound-small.sqlite.gz), so the call is the before-and-after alone. SEEDS="" runs no seed
# (the corners and the merge alone, where the seeds are left to a second call); BEFORE=0 skips the runs as shipped
# (where an earlier lease measured them). SEEDS=changed runs those of seeds 1-10 where the merge changes some choice
# (benchmarks/dispatch_preview.py --changed-from, read offline): at the others the runs through the shipped database
# stand for the merged one, and a lease's seconds go to the seeds that can move.
# From the repository root with OUT set (COMMIT names the sources; else benchmarks/sources.py reads git, marking
# a tree that differs from its HEAD, as a GPU node's copy with an older .git does):
#   OUT=out COMMIT=abc1234 bash benchmarks/release/corners_ship_check.sh
source benchmarks/release/common.sh
changed_seeds() {  # the seeds 1-10 at which the merged database chooses otherwise than the shipped one
  python3 benchmarks/dispatch_preview.py --gpu "$GPU_NAME" --seeds 1-10 --db "$OUT/$TAG.sqlite" \
    --changed-from "autotune/store/tuned/$TAG.sqlite"
}
corner_runs() {  # a line per entry of SHAPES: its shapes file, its families (all: small_corners.py's), its seconds
  local f n total=0
  for f in $SHAPES; do n=$(grep -c "M = " "${f%%@*}"); total=$((total + n)); done
  for f in $SHAPES; do
    n=$(grep -c "M = " "${f%%@*}")
    local families="${FAMILIES:-all}"; [[ "$f" == *@* ]] && families="${f#*@}"
    echo "${f%%@*} $families $(( ${BUDGET:-230} * n / total ))"
  done
}
case "$TAG" in
  h200) SHAPES="${SHAPES:-benchmarks/host-bound-small-shapes.toml}"; SEEDS="${SEEDS-5 2}" ;;
  h100) SEEDS="${SEEDS-1 4}"
        SHAPES="${SHAPES:-benchmarks/host-bound-shapes.toml benchmarks/host-bound-misaligned-shapes.toml benchmarks/host-bound-odd-n-shapes.toml}" ;;
  *) echo "no shipped database for $GPU_NAME" | tee -a "$LOG"; exit 1 ;;
esac
if [ -n "${CORNERS:-}" ]; then
  step "corners from $CORNERS"
  gunzip -c "$CORNERS" >"$WORK/corners.sqlite"
else
  while read -r f families share; do
    step "corners of $f ($share s, families: $families)"
    [ "$families" = all ] && families=""
    timeout "$((share + 120))" python3 benchmarks/small_corners.py --shapes "$f" --budget "$share" \
      ${families:+--families "$families"} --db "$WORK/corners.sqlite" </dev/null >"$WORK/corners.log" 2>&1
    echo "rc $?" | tee -a "$LOG"
    tail -3 "$WORK/corners.log" | tee -a "$LOG"
  done < <(corner_runs)
fi
step "merge into autotune/store/tuned/$TAG.sqlite"
python3 scripts/slim_database.py "$WORK/corners.sqlite" "$WORK/slim.sqlite" | tee -a "$LOG"
python3 scripts/ship_database.py "autotune/store/tuned/$TAG.sqlite" "$WORK/slim.sqlite" "$OUT/$TAG.sqlite" | tee -a "$LOG"
if [ "$SEEDS" = changed ]; then
  SEEDS=$(changed_seeds)
  step "seeds whose choices the merge changes: ${SEEDS:-none}"
fi
# the package anyshape.py imports (from /tmp/site): run from /, where the checkout's own autotune/ is not on the path
INSTALLED=$(cd / && python3 -c "import autotune, pathlib; print(pathlib.Path(autotune.__file__).parent / 'store/tuned')")
anyshape() {  # anyshape SEED WHEN
  step "anyshape seed $1 through the shipped databases ($2)"
  timeout 150 python3 benchmarks/anyshape.py --seed "$1" --count 40 --commit "$COMMIT" \
    -o "$OUT/anyshape-seed$1-$2-$TAG.json" >"$WORK/seed.log" 2>&1
  echo "rc $?" | tee -a "$LOG"
  sed -n "/\"summary\"/,\$p" "$WORK/seed.log" | tee -a "$LOG"
}
[ "${BEFORE:-1}" = 0 ] || for s in $SEEDS; do anyshape "$s" shipped; done
cp "$OUT/$TAG.sqlite" "$INSTALLED/$TAG.sqlite"
for s in $SEEDS; do anyshape "$s" merged; done
[ -n "${CORNERS:-}" ] || gzip -c "$WORK/slim.sqlite" >"$OUT/$TAG-corners.sqlite.gz"
step "done"
pack_out
