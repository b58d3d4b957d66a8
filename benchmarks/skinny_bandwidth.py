"""The skinny family's share of HBM bandwidth at small M (issue 13): each config verified and timed
by the CUDA backend (as `autotune measure` does) at 1x8192x8192, 8x8192x8192, 16x8192x8192 and
16x4096x14336, against cuBLAS timed in the same process. The bytes counted are B's, K*N*4 (A and C
are small next to it), so GB/s = K*N*4 / time and % is of the H200's 4.8 TB/s.

    python benchmarks/skinny_bandwidth.py --out skinny.json
    python benchmarks/skinny_bandwidth.py --out one.json -c 'THREADS=32 MR=16 KT=256 SPLITK=4 KW=8'

Without -c it measures SWEEP: the default before KW, the default now, and their neighbours.
A config that does not fit a shape (more tiles than turnstiles, say) is left out at that shape.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from autotune.cli.options import parse_shape
from autotune.codegen.render import render
from autotune.families import SKINNY
from autotune.space import Config, make_config, shape_violations

SHAPES = ((1, 8192, 8192), (8, 8192, 8192), (16, 8192, 8192), (16, 4096, 14336))
HBM_BYTES_PER_S = 4.8e12  # H200
SWEEP = (
    "THREADS=128 MR=16 KT=128 SPLITK=32 KW=1",  # the default before KW
    "THREADS=32 MR=8 KT=64 SPLITK=4 KW=8",  # the default
    "THREADS=32 MR=8 KT=256 SPLITK=4 KW=8",
    "THREADS=32 MR=8 KT=256 SPLITK=2 KW=8",
    "THREADS=64 MR=8 KT=256 SPLITK=4 KW=4",
    "THREADS=32 MR=16 KT=64 SPLITK=4 KW=8",
    "THREADS=32 MR=16 KT=256 SPLITK=2 KW=8",
    "THREADS=32 MR=1 KT=256 SPLITK=2 KW=16",
    "THREADS=32 MR=1 KT=256 SPLITK=4 KW=8",
    "THREADS=32 MR=1 KT=64 SPLITK=8 KW=8",
)


def parse(text: str) -> Config:
    return make_config(SKINNY, dict(part.split("=", 1) for part in text.split()))


def measure_shape(shape: tuple[int, int, int], configs: list[Config]) -> list[dict]:
    from autotune.backends.cuda.backend import CudaBackend

    M, N, K = shape
    backend = CudaBackend(M, N, K)
    assert backend.baseline is not None  # the CUDA backend always times cuBLAS
    cublas_ms = backend.baseline.median_ms
    rows = []
    for config in configs:
        if shape_violations(config, M, N, backend.limits):
            continue
        outcome = backend.measure(config, render(config, backend.limits))
        ms = outcome.timing.median_ms if outcome.timing else None
        rate = K * N * 4 / (ms / 1e3) if ms else None
        rows.append({"shape": f"{M}x{N}x{K}", "config": config.name, "status": outcome.status, "ms": ms,
                     "GB/s": rate / 1e9 if rate else None, "pct_hbm": 100 * rate / HBM_BYTES_PER_S if rate else None,
                     "cublas_ms": cublas_ms, "num_regs": outcome.extra.get("num_regs"), "reason": outcome.reason})
        row = rows[-1]
        speed = f"{ms:.4f} ms  {row['GB/s']:6.0f} GB/s  {row['pct_hbm']:5.1f}%" if ms else outcome.reason
        print(f"{row['shape']:>14}  {config.name:<40} {outcome.status:<6} {speed}  (cuBLAS {cublas_ms:.4f} ms)",
              flush=True)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="JSON file for the rows")
    ap.add_argument("-c", "--config", action="append", help="'NAME=VALUE ...' of a skinny config (repeatable)")
    ap.add_argument("--shapes", help="MxNxK,... (default: the four of issue 13)")
    args = ap.parse_args()
    configs = [parse(text) for text in (args.config or SWEEP)]
    shapes = SHAPES
    if args.shapes:
        shapes = tuple(parse_shape(s) for s in args.shapes.split(","))
    rows = [row for shape in shapes for row in measure_shape(shape, configs)]
    Path(args.out).write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
