#!/usr/bin/env bash
# Stream-K against the blocked default and cuBLAS (in the same process) at few-tile, long-K shapes:
# `autotune measure` of each family's fitted default at each shape into one database, then one JSON
# row per shape (benchmarks/data/streamk-h200.json). Needs a GPU; DB and OUT may be set.
set -euo pipefail
DB=${DB:-/tmp/streamk.sqlite}
OUT=${OUT:-benchmarks/data}
AUTOTUNE="autotune"; command -v autotune >/dev/null || AUTOTUNE="python3 -m autotune.cli"
SHAPES=(1536x1536x1536 2176x2048x2048 1024x2048x8192 2048x2048x8192 1024x1024x4096 1024x1024x16384
        512x512x65536 256x256x100000)
for s in "${SHAPES[@]}"; do
  IFS=x read -r M N K <<<"$s"
  for family in streamk blocked; do
    $AUTOTUNE measure --M "$M" --N "$N" --K "$K" --family "$family" --db "$DB" 2>&1 | tail -1
  done
done
python3 - "$DB" "$OUT/streamk-h200.json" "${SHAPES[@]}" <<'PY'
import json, sqlite3, sys
db, out, shapes = sqlite3.connect(sys.argv[1]), sys.argv[2], sys.argv[3:]
db.row_factory = sqlite3.Row
rows = []
for s in shapes:
    M, N, K = map(int, s.split("x"))
    best = {f: db.execute("SELECT kernel, time_ms, cublas_ms FROM results WHERE M=? AND N=? AND K=? AND family=? "
                          "AND status='ok' ORDER BY time_ms LIMIT 1", (M, N, K, f)).fetchone() for f in ("streamk", "blocked")}
    sk, bl = best["streamk"], best["blocked"]
    rows.append({"M": M, "N": N, "K": K, "streamk_ms": sk and sk["time_ms"], "streamk_kernel": sk and sk["kernel"],
                 "blocked_ms": bl and bl["time_ms"], "cublas_ms": (sk or bl) and (sk or bl)["cublas_ms"]})
    r = rows[-1]
    print(s, "cuBLAS/streamk", r["cublas_ms"] and r["streamk_ms"] and round(r["cublas_ms"] / r["streamk_ms"], 3),
          "cuBLAS/blocked", r["cublas_ms"] and r["blocked_ms"] and round(r["cublas_ms"] / r["blocked_ms"], 3))
open(out, "w").write(json.dumps({"device": "NVIDIA H200", "shapes": rows}, indent=1) + "\n")
PY
