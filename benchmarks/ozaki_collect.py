"""Gather benchmarks/precision_vs_cublas.py outputs of the ozaki family (and its peers) into the one file the
Ozaki issue asks for: {"device", "runs": [{family, kernel, inputs}], "shapes": [{"M","N","K","ours_ms",
"cublas_ms","err_ours","err_cublas","moduli","inputs","family"}]}.

    python benchmarks/ozaki_collect.py out/ozaki-T8-randn.json out/tf32x3wg-randn.json ... -o benchmarks/data/ozaki-h200.json
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

KEEP = ("M", "N", "K", "ours_ms", "cublas_ms", "err_ours", "err_cublas", "moduli", "inputs", "speedup", "ratio",
        "passes_fp32_tc")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+")
    parser.add_argument("-o", "--out", required=True)
    parser.add_argument("--commit", default="")
    args = parser.parse_args()
    runs = [json.loads(Path(p).read_text()) for p in args.runs]
    shapes = [{"family": r["family"], "kernel": r["kernel"], **{k: s[k] for k in KEEP if k in s}}
              for r in runs for s in r["shapes"]]
    out = {"device": runs[0]["device"], "commit": args.commit, "cublas": runs[0]["cublas"], "shapes": shapes}
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
