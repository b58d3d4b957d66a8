"""Where the tall kernel's time goes at N = 16 and N = 1: the register kernel (ST=0) against the cp.async
pipeline of ST stages, with its splits, block sizes and rows per group varied.

Each variant is a tall config, verified and timed by the CUDA backend against cuBLAS in the same
process, then (with --ncu) a few are profiled by Nsight Compute with the sections that say whether the
loop waits on memory, on latency or on issue. The share of HBM counts A's bytes, read once.

    python benchmarks/profiling/tall_probe.py --out probe.json [--ncu ncu.txt]
"""
from __future__ import annotations

from _probe import HBM_BYTES_PER_S, Profiled, main

from autotune.codegen.render import render
from autotune.families import TALL
from autotune.space import Config, make_config

# the default's tiles (T256 L8 R2 KT64 SK4) without and with stages, then the splits, tiles and blocks
N16 = ("ST=0", "ST=3", "ST=4", "ST=6", "ST=4 SPLITK=2", "ST=4 SPLITK=8", "ST=6 SPLITK=8", "ST=4 KT=32", "ST=6 KT=32",
       "ST=4 THREADS=128", "ST=4 ROWS=1")
N1 = ("NR=4 ST=0", "NR=4 ST=4", "NR=4 ST=6", "NR=4 ST=4 ROWS=4", "NR=4 ST=4 SPLITK=8", "NR=4 ST=6 KT=32")
VARIANTS = tuple((shape, params) for shape, group in (((8192, 16, 8192), N16), ((8192, 1, 8192), N1))
                 for params in group)
PROFILED = (0, 2, 11, 12)  # indices of VARIANTS that --ncu profiles: ST=0 and ST=4 at both shapes


def config_of(params: str) -> Config:
    return make_config(TALL, dict(p.split("=") for p in params.split()))


def time_all() -> list[dict]:
    from autotune.backends.cuda.backend import CudaBackend

    rows, backends = [], {}
    for shape, params in VARIANTS:
        M, N, K = shape
        backend = backends.get(shape) or backends.setdefault(shape, CudaBackend(M, N, K))
        config = config_of(params)
        outcome = backend.measure(config, render(config))
        ms = outcome.timing.median_ms if outcome.timing else None
        pct = 100 * M * K * 4 / (ms / 1e3) / HBM_BYTES_PER_S if ms else None
        rows.append({"shape": "x".join(map(str, shape)), "variant": params or "default", "kernel": config.name,
                     "status": outcome.status, "ms": ms, "pct_hbm": pct,
                     "cublas_ms": backend.baseline.median_ms if backend.baseline else None,
                     "num_regs": outcome.extra.get("num_regs"), "reason": outcome.reason})
        r = rows[-1]
        cublas = f"{r['cublas_ms']:.4f}" if r["cublas_ms"] else "-"
        print(f"{r['shape']:>12} {r['variant']:<28} {r['status']:<6} "
              f"{(f'{ms:.4f} ms {pct:5.1f}%') if ms else r['reason']} regs {r['num_regs']} (cuBLAS {cublas})",
              flush=True)
    return rows


def profiled() -> list[Profiled]:
    return [(params or "default", config_of(params), render(config_of(params)), shape)
            for shape, params in (VARIANTS[i] for i in PROFILED)]


if __name__ == "__main__":
    raise SystemExit(main(__doc__, time_all, profiled))
