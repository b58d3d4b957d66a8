"""Gather benchmarks/precision_vs_cublas.py outputs of the ozaki family (and its peers) into the one file the
Ozaki issue asks for: {"device", "runs": [{family, kernel, inputs}], "shapes": [{"M","N","K","ours_ms",
"cublas_ms","err_ours","err_cublas","moduli","inputs","family"}]}.

    python benchmarks/ozaki_collect.py out/ozaki-T8-randn.json out/tf32x3wg-randn.json ... -o benchmarks/data/ozaki-h200.json

Each shape row carries the commit its run measured; --keep FAMILY carries that family's rows over from the
output file as it is (measured at an earlier commit, which they keep).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

KEEP = ("M", "N", "K", "ours_ms", "cublas_ms", "err_ours", "err_cublas", "moduli", "inputs", "speedup", "ratio",
        "passes_fp32_tc", "prologue_ms", "scale")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+")
    parser.add_argument("-o", "--out", required=True)
    parser.add_argument("--commit", default="", help="the commit the runs measured")
    parser.add_argument("--keep", action="append", default=[], help="a family whose rows the output file keeps")
    args = parser.parse_args()
    runs = [json.loads(Path(p).read_text()) for p in args.runs]
    shapes = [{"family": r["family"], "kernel": r["kernel"], "commit": args.commit, **{k: s[k] for k in KEEP if k in s}}
              for r in runs for s in r["shapes"]]
    if args.keep:
        old = json.loads(Path(args.out).read_text())
        shapes += [{"commit": old.get("commit", ""), **s} for s in old["shapes"] if s["family"] in args.keep]
    out = {"device": runs[0]["device"], "cublas": runs[0]["cublas"], "shapes": shapes}
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
