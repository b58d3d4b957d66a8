#!/usr/bin/env bash
# One GPU against several: the same search (--trials TRIALS at M^3) into fresh databases, with an
# empty compile cache each (a warm cache hides the compile work that several GPUs need), on
# --devices 0 and on --devices DEVICES; each run's summary line, and where its new trials spent
# their time (benchmarks/trial_breakdown.py). New measurements per second is "new measurements" /
# "s" of the summary line (the search loop's own wall time). EXTRA adds search options: with
# "--sampler random --family blocked" both runs measure the same configs (random proposals do not
# depend on results), so the comparison is not blurred by one run meeting slower kernels. The ratio of
# the two runs' new measurements per second goes to OUT/scaling-M.json.
#
#   DEVICES=0,1 TRIALS=120 M=4096 OUT=folder EXTRA="--sampler random --family blocked" bash benchmarks/scaling.sh
set -u
trials=${TRIALS:-120}; M=${M:-4096}; devices=${DEVICES:-0,1}; out=${OUT:-.}
for devs in 0 "$devices"; do
  tag=$(echo "$devs" | tr , -)
  db="$out/scaling-$M-gpus-$tag.sqlite"
  rm -f "$db" "$db-wal" "$db-shm"
  export AUTOTUNE_CACHE; AUTOTUNE_CACHE=$(mktemp -d)
  echo "== --devices $devs"
  start=$(date +%s.%N)
  timeout 600 python3 -m autotune.cli search --M "$M" --trials "$trials" --devices "$devs" --db "$db" ${EXTRA:-} \
    > "$out/scaling-$M-gpus-$tag.log" 2>&1
  end=$(date +%s.%N)
  grep -E "new measurements|error" "$out/scaling-$M-gpus-$tag.log" | tail -3
  echo "command wall (start-up included): $(python3 -c "print(round($end - $start, 1))") s"
  python3 benchmarks/trial_breakdown.py "$db" "$out/scaling-$M-gpus-$tag.log"
done
# Both runs' new measurements per second, and their ratio (the issue's 1.8x), as JSON beside the logs.
python3 - "$out" "$M" "$devices" <<'PY'
import json
import sys

sys.path.insert(0, "benchmarks")
from trial_breakdown import search_wall  # noqa: E402

out, M, devices = sys.argv[1], int(sys.argv[2]), sys.argv[3]
runs = []
for devs in ("0", devices):
    wall = search_wall(f"{out}/scaling-{M}-gpus-{devs.replace(',', '-')}.log")
    if wall:
        trials, new, seconds = wall
        runs.append({"devices": devs, "trials": trials, "new": new, "seconds": seconds, "new_per_s": new / seconds})
ratio = runs[1]["new_per_s"] / runs[0]["new_per_s"] if len(runs) == 2 else None
with open(f"{out}/scaling-{M}.json", "w") as f:
    json.dump({"M": M, "runs": runs, "new_per_s_ratio": ratio}, f, indent=1)
print(f"new measurements per second, --devices {devices} against 0: {ratio:.2f}x" if ratio else "no ratio: a run failed")
PY
