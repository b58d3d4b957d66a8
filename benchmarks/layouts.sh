#!/usr/bin/env bash
# The best kernel of each operand layout (NN, NT, TN, TT) at one shape, each found by its own
# search, and each layout's best against NN's (issue 14: within 3% at 4096^3).
#   OUT=dir bash benchmarks/layouts.sh [M] [trials]
# Writes $OUT/layouts.sqlite (every row), $OUT/layouts.json and prints the table.
set -euo pipefail
M=${1:-4096}; TRIALS=${2:-40}; OUT=${OUT:-.}
DB="$OUT/layouts.sqlite"
for L in NN NT TN TT; do
  python3 -m autotune.cli search --M "$M" --layout "$L" --family blocked --trials "$TRIALS" --db "$DB" \
    >"$OUT/layouts-search-$L.log" 2>&1 || { tail -5 "$OUT/layouts-search-$L.log"; exit 1; }
done
python3 - "$DB" "$M" "$OUT/layouts.json" <<'PY'
import json, sqlite3, sys
db, M, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
con = sqlite3.connect(db)
layouts = {"NN": (0, 0), "NT": (0, 1), "TN": (1, 0), "TT": (1, 1)}
rows = []
for name, (ta, tb) in layouts.items():
    r = con.execute("SELECT kernel, time_ms, cublas_ms, gpu_name FROM results WHERE status='ok' AND M=? AND N=? "
                    "AND K=? AND coalesce(TA,0)=? AND coalesce(TB,0)=? ORDER BY time_ms LIMIT 1",
                    (M, M, M, ta, tb)).fetchone()
    rows.append({"layout": name, "kernel": r[0], "ms": r[1], "cublas_nn_ms": r[2], "gpu": r[3]})
nn = rows[0]["ms"]
for r in rows:
    r["nn_over_this"] = nn / r["ms"]
    print(f"{r['layout']}  {r['ms']:.3f} ms  {r['nn_over_this']:.1%} of NN's speed  "
          f"(cuBLAS NN {r['cublas_nn_ms']:.3f} ms)  {r['kernel']}")
json.dump({"device": rows[0]["gpu"], "shape": [M, M, M], "layouts": rows}, open(out, "w"), indent=1)
PY
