"""Speed and energy side by side: each family's fastest verified row at a shape that has its board power
(`AUTOTUNE_ENERGY=1 autotune search ...`, backends/cuda/energy.py), beside cuBLAS's baseline, from a results
database into benchmarks/data/energy-<shape>-<gpu>.json: {"device", "shape", "commit", "rows": [{"family",
"kernel", "ms", "tflops", "watts", "gflops_per_watt"}]}, cuBLAS first.

    AUTOTUNE_ENERGY=1 autotune search --M 8192 --precision fp32-tc --db e8192.sqlite
    python benchmarks/energy_rows.py e8192.sqlite --M 8192 --commit <hash>
"""
from __future__ import annotations

import argparse
import json
import sqlite3
import sys
from pathlib import Path

from autotune.space.devices import gpu_tag


def rows(db: sqlite3.Connection, M: int, N: int, K: int) -> list[dict]:
    base = db.execute("SELECT gpu_name, time_ms, tflops, watts FROM baselines WHERE M=? AND N=? AND K=? AND watts "
                      "IS NOT NULL ORDER BY id DESC LIMIT 1", (M, N, K)).fetchone()
    out = []
    if base is not None:
        out.append({"family": "cuBLAS", "kernel": "cuBLAS SGEMM (no TF32)", "ms": base[1], "tflops": base[2],
                    "watts": base[3], "gflops_per_watt": base[2] * 1000 / base[3]})
    best = db.execute("SELECT family, kernel, MIN(time_ms), tflops, watts, gflops_per_watt FROM results WHERE M=? AND "
                      "N=? AND K=? AND status='ok' AND watts IS NOT NULL GROUP BY family ORDER BY 3", (M, N, K))
    out += [{"family": f, "kernel": k, "ms": ms, "tflops": t, "watts": w, "gflops_per_watt": g}
            for f, k, ms, t, w, g in best]
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("db")
    parser.add_argument("--M", type=int, required=True)
    parser.add_argument("--N", type=int)
    parser.add_argument("--K", type=int)
    parser.add_argument("--commit", default="")
    parser.add_argument("-o", "--out")
    args = parser.parse_args()
    M, N, K = args.M, args.N or args.M, args.K or args.M
    db = sqlite3.connect(f"file:{args.db}?mode=ro", uri=True)
    gpu = db.execute("SELECT gpu_name FROM baselines LIMIT 1").fetchone()[0]
    out = {"device": gpu, "shape": [M, N, K], "commit": args.commit, "rows": rows(db, M, N, K)}
    path = Path(args.out or f"benchmarks/data/energy-{M}x{N}x{K}-{gpu_tag(gpu)}.json")
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
