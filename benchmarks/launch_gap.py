"""How much of a timed run is the host's launch path: cuBLAS and a few configs timed by the CUDA
backend with its head start (backends/cuda/timing.py) and without it, at the shapes where a run is
short, beside the host's microseconds to enqueue one run (which the head start must exceed).

    python benchmarks/launch_gap.py --out gap.json
    python benchmarks/launch_gap.py --out gap.json --shapes 512x512x512 -c 'blocked:BM=64 BN=64'

Each -c is 'family:NAME=VALUE ...' (left-out parameters take the family's default, fitted to the
shape as a search's first trial is); without -c each shape gets its family defaults of SHAPES.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from autotune.cli.options import parse_shape
from autotune.codegen.render import render
from autotune.families import FAMILIES
from autotune.space import Config, Limits, fitted, make_config, shape_violations

SHAPES = {  # shape: the families whose fitted defaults it is timed with
    (256, 256, 256): ("tiled", "blocked"), (512, 512, 512): ("blocked", "splitk"),
    (1024, 1024, 1024): ("blocked", "splitk"), (1, 8192, 8192): ("skinny",), (16, 8192, 8192): ("skinny",),
    (8192, 16, 8192): ("tall",), (4097, 4095, 4093): ("blocked",), (2048, 2048, 2048): ("blocked",),
}


def parse(text: str, shape: tuple[int, int, int]) -> Config:
    family_name, _, rest = text.partition(":")
    given: dict = dict(part.split("=", 1) for part in rest.split())
    return fitted(make_config(FAMILIES[family_name], given), shape, Limits(), given)


def enqueue_us(run, stream, reps: int = 20) -> dict:
    """The host's microseconds to enqueue run(), each after a sync: median and worst of reps."""
    spent = []
    for _ in range(reps):
        stream.sync()
        t0 = time.perf_counter()
        run()
        spent.append((time.perf_counter() - t0) * 1e6)
    stream.sync()
    spent.sort()
    return {"median": spent[len(spent) // 2], "max": spent[-1]}


def both_ways(run, backend) -> dict:
    from autotune.backends.cuda.timing import nothing, time_ms

    with_head = time_ms(run, backend.stream, min_reps=20, head_start=backend.head_start).median_ms
    without = time_ms(run, backend.stream, min_reps=20, head_start=nothing).median_ms
    return {"ms_head_start": with_head, "ms_without": without, "enqueue_us": enqueue_us(run, backend.stream)}


def measure_shape(shape: tuple[int, int, int], texts: list[str]) -> list[dict]:
    from autotune.backends.cuda.backend import CudaBackend, first_error
    from autotune.backends.cuda.launch import load_kernels
    from autotune.codegen import nvrtc

    M, N, K = shape
    backend = CudaBackend(M, N, K)
    p = backend.main
    rows = [{"shape": f"{M}x{N}x{K}", "config": "cublas",
             **both_ways(lambda: backend.blas.sgemm(int(p.a.handle), int(p.b.handle), int(p.c.handle), M, N, K),
                         backend)}]
    for text in texts:
        config = parse(text, shape)
        if shape_violations(config, M, N, backend.limits):
            continue
        built = nvrtc.compile_source(render(config, backend.limits), config.name, backend.info.arch)
        if not built.ok:
            print(f"{config.name}: does not compile, left out: {first_error(built.log)}", flush=True)
            continue
        kernels = load_kernels(built.cubin, config, config.geometry(M, N).shared_bytes, backend.info.index)
        rows.append({"shape": f"{M}x{N}x{K}", "config": config.name,
                     **both_ways(lambda: backend._launch(kernels, config, p), backend)})
    for row in rows:
        print(f"{row['shape']:>16} {row['config'][:60]:<60} head start {row['ms_head_start']:.4f} ms, without "
              f"{row['ms_without']:.4f} ms, enqueue {row['enqueue_us']['median']:.0f} us "
              f"(max {row['enqueue_us']['max']:.0f})", flush=True)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="JSON file for the rows")
    ap.add_argument("-c", "--config", action="append", help="'family:NAME=VALUE ...' (repeatable)")
    ap.add_argument("--shapes", help="MxNxK,... (default: SHAPES)")
    args = ap.parse_args()
    shapes = list(SHAPES)
    if args.shapes:
        shapes = [parse_shape(s) for s in args.shapes.split(",")]
    rows = []
    for shape in shapes:
        texts = args.config or [f"{name}:" for name in SHAPES.get(shape, ("blocked",))]
        rows += measure_shape(shape, texts)
    Path(args.out).write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
