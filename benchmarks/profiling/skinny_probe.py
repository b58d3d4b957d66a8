"""Where the skinny kernel's time goes at M = 8 and 16 (issue 13: 75% of HBM at M <= 16).

Each variant is a skinny config plus textual edits of its rendered source (the load ring's depth
AHEAD, a minimum of blocks per SM in __launch_bounds__), verified and timed by the CUDA backend
against cuBLAS in the same process, then (with --ncu) profiled by Nsight Compute with the sections
that say whether the loop waits on memory, on latency or on issue.

    python benchmarks/profiling/skinny_probe.py --out probe.json [--ncu ncu.txt]
"""
from __future__ import annotations

import re

from _probe import HBM_BYTES_PER_S, Profiled, main

from autotune.codegen.render import render
from autotune.families import SKINNY
from autotune.space import Config, make_config

# (shape, params, edits): edits may set AHEAD (the ring's groups, before AH was a parameter) and
# MINB (blocks per SM asked of ptxas)
M16 = ("THREADS=32 MR=8 KT=64 SPLITK=4 KW=8", "MR=16 AH=1", "MR=16 KT=32 SA=1 AH=1", "MR=16 KT=32 SA=1 AH=2",
       "MR=16 KT=16 SA=1 AH=1", "MR=16 KT=32 KW=4 SPLITK=8 SA=1 AH=1", "MR=16 KT=32 KW=4 SPLITK=8 SA=1 AH=2",
       "MR=16 KT=32 KW=4 SPLITK=4 SA=1 AH=2", "MR=16 KT=32 KW=8 SPLITK=2 SA=1 AH=1",
       "MR=16 KT=16 KW=4 SPLITK=16 SA=1 AH=2", "MR=8 KT=64 SA=1 AH=2")
M8 = ("MR=8 KT=64", "MR=8 KT=64 SA=1 AH=2", "MR=8 KT=64 SA=1 AH=3", "MR=8 KT=32 SA=1 AH=2", "MR=8 KT=64 KW=4 SPLITK=8 SA=1 AH=3",
      "MR=8 KT=64 KW=4 SPLITK=4 SA=1 AH=3")
M1 = ("MR=1 KT=64", "MR=1 SA=1 AH=2", "MR=1 SA=1 AH=3", "MR=1 KW=16 SPLITK=2 SA=1 AH=3")
VARIANTS = tuple((shape, params, {}) for shapes, group in (
    (((16, 8192, 8192), (16, 14336, 4096), (16, 4096, 14336)), M16),
    (((8, 8192, 8192), (8, 14336, 4096)), M8),
    (((1, 8192, 8192),), M1)) for shape in shapes for params in group)
PROFILED = (1, 2, 3, 5)  # indices of VARIANTS that --ncu profiles


def config_of(params: str) -> Config:
    """SA=0 and SB=0 unless named: the variants without them were measured before either was the
    default (A read from global memory in the loop, B's ring in registers)."""
    return make_config(SKINNY, {"SA": "0", "SB": "0", **dict(p.split("=") for p in params.split())})


def edited(config: Config, edits: dict[str, int]) -> str:
    source = render(config)
    if "AHEAD" in edits:
        source, n = re.subn(r"AHEAD = \d+;", f"AHEAD = {edits['AHEAD']};", source)
        assert n == 1
    if "MINB" in edits:
        threads = config.values["THREADS"] * config.values["KW"]
        source, n = re.subn(rf"__launch_bounds__\({threads}\)", f"__launch_bounds__({threads}, {edits['MINB']})",
                            source)
        assert n == 1
    return source


def label(params: str, edits: dict[str, int]) -> str:
    return params + "".join(f" {k}={v}" for k, v in edits.items())


def time_all() -> list[dict]:
    from autotune.backends.cuda.backend import CudaBackend

    rows, backends = [], {}
    for shape, params, edits in VARIANTS:
        M, N, K = shape
        backend = backends.get(shape) or backends.setdefault(shape, CudaBackend(M, N, K))
        config = config_of(params)
        outcome = backend.measure(config, edited(config, edits))
        ms = outcome.timing.median_ms if outcome.timing else None
        pct = 100 * K * N * 4 / (ms / 1e3) / HBM_BYTES_PER_S if ms else None
        rows.append({"shape": "x".join(map(str, shape)), "variant": label(params, edits), "status": outcome.status,
                     "ms": ms, "pct_hbm": pct, "cublas_ms": backend.baseline.median_ms if backend.baseline else None,
                     "num_regs": outcome.extra.get("num_regs"), "reason": outcome.reason})
        r = rows[-1]
        print(f"{r['shape']:>12} {r['variant']:<52} {r['status']:<6} "
              f"{(f'{ms:.4f} ms {pct:5.1f}%') if ms else r['reason']} regs {r['num_regs']} (cuBLAS {r['cublas_ms']:.4f})",
              flush=True)
    return rows


def profiled() -> list[Profiled]:
    out: list[Profiled] = []
    for shape, params, edits in (VARIANTS[i] for i in PROFILED):
        config = config_of(params)
        out.append((label(params, edits), config, edited(config, edits), shape))
    return out


if __name__ == "__main__":
    raise SystemExit(main(__doc__, time_all, profiled))
