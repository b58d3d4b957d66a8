# Sourced by the release checks (operands_check.sh, tf32x3wg_check.sh, tf32x3ws_check.sh) from the repository root: OUT
# (created), WORK (a scratch folder the caller tars into OUT), COMMIT (the sources' commit: as given, else benchmarks/sources.py's), LOG ($OUT/log.txt, started with the
# GPU's name, UUID, driver and clock), GPU_NAME and TAG (h200, h100, ...: space.devices.gpu_tag, the suffix of output files), the lean wheelhouse installed (benchmarks/device_setup.sh), AT
# (the CLI as a command that `timeout` can run: device_setup.sh's `autotune` may be a shell function),
# step (a timestamped heading in the log), fp32_tc_search (issue 15's default search at 4096^3, its
# summary and best in the log, its database $WORK/tc.sqlite), family_measure (named configs of a family), splitk_measure (of splitk)
# suite_pass (the shape suite with TRIALS, TIMEOUT and TOTAL, and REMEASURE if set, on $OUT/suite.sqlite, its outputs in $OUT) and gpu_tests
# (the GPU tests under TESTS, default all of tests/; the summary in the log, the whole output in $WORK/gpu_tests.txt)
# and pack_out (with PACK=1, $OUT's files tarred into $OUT/out.tgz: a device call brings back at most 8 files).
set -o pipefail
OUT="${OUT:-out}"; mkdir -p "$OUT"
WORK=$(mktemp -d); LOG="$OUT/log.txt"
source benchmarks/device_setup.sh >/dev/null 2>&1 || { echo "setup failed"; exit 1; }
AT="python3 -m autotune.cli"
COMMIT="${COMMIT:-$(python3 benchmarks/sources.py)}"  # the sources, as the outputs record them (benchmarks/sources.py)
step() { echo "== $* ($(date +%T))" | tee -a "$LOG"; }
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.max.sm --format=csv,noheader | tee "$LOG"
GPU_NAME=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
TAG=$(python3 -c 'import sys; from autotune.space.devices import gpu_tag; print(gpu_tag(sys.argv[1]))' "$GPU_NAME")  # output files' suffix, shipped db
fp32_tc_search() {
  step "autotune search --M 4096 --precision fp32-tc (the default budget)"
  ( time timeout 200 $AT search --M 4096 --precision fp32-tc --db "$WORK/tc.sqlite" ) 2>"$WORK/tc-progress.txt" | head -8 | tee -a "$LOG"
  grep real "$WORK/tc-progress.txt" | tee -a "$LOG"
  timeout 60 $AT best --M 4096 --db "$WORK/tc.sqlite" 2>&1 | tee -a "$LOG"
}
family_measure() {  # family_measure FAMILY DB MxNxK NAME=V1,V2 ...: one process, its cuBLAS, every product of the values
  local family=$1 db=$2 shape=$3; shift 3
  local args=(); for kv in "$@"; do args+=(-p "$kv"); done
  echo "-- $family $shape $*" | tee -a "$LOG"
  read -r M N K <<<"${shape//x/ }"
  timeout "${MEASURE_TIMEOUT:-150}" $AT measure --M "$M" --N "$N" --K "$K" --family "$family" "${args[@]}" --db "$db" 2>&1 \
    | grep -v "no SASS" | tee -a "$LOG"
}
splitk_measure() { family_measure splitk "$@"; }
suite_pass() {
  step "autotune suite --trials $TRIALS --timeout $TIMEOUT --total-timeout $TOTAL"
  ( time timeout $((TOTAL + 120)) $AT suite --shapes autotune/api/shapes.toml --trials "$TRIALS" --timeout "$TIMEOUT" \
      --total-timeout "$TOTAL" ${REMEASURE:+--remeasure "$REMEASURE"} --db "$OUT/suite.sqlite" --out "$OUT" ) >"$WORK/suite-log.txt" 2>&1
  grep -v "^autotune: suite: .*new trials" "$WORK/suite-log.txt" | grep -v "it/s\]\|s/it\]" | tail -40 | tee -a "$LOG"
}
gpu_tests() {
  step "GPU tests"
  timeout 240 python3 -m pytest -m gpu -p no:cacheprovider --timeout 90 ${TESTS:-tests} >"$WORK/gpu_tests.txt" 2>&1
  grep -E "passed|failed|FAILED|Error" "$WORK/gpu_tests.txt" | tail -15 | tee -a "$LOG"
}
pack_out() {  # with PACK=1: $OUT's files into $OUT/out.tgz, alone (a device call brings back at most 8 files)
  [ "${PACK:-}" = 1 ] || return 0
  (cd "$OUT" && tar czf out.tgz --exclude=out.tgz -- * && find . -type f ! -name out.tgz -delete)
}
