"""A family's kernel against cuBLAS SGEMM (torch.matmul, TF32 off) in speed and in accuracy, both
against a float64 product of the same inputs: the file the 3xTF32 issue asks for.

    python benchmarks/precision_vs_cublas.py --family tf32x3 [-p NAME=VALUE ...] \
        [--shapes 4096,2048,8192,4000,4097x4095x4093] [--inputs uniform] [--out benchmarks/data/tf32x3-h200.json]

Each kernel is rendered by autotune and compiled by its NVRTC (for sm_90a where the source asks:
codegen.nvrtc.ARCH_SPECIFIC), then loaded and launched by CuPy (an outside client: the same source
a user exports), with its prologue first into a workspace where the config has one (both launches
timed together), on inputs uniform in [-1, 1) (--inputs randn: standard normal; wide: the fp32-tc
verification's second input set, reference.wide_inputs with the search's default seed 0, uniform values
with exponents spread over 2^+-20 across and within rows and columns, the inputs on which a per-row
scaling like the Ozaki scheme's loses bits); times are CUDA-event means over repeated
launches after warm-up, best of five rounds, for both. err_* is reference.relative_error
(||C - C64||_F / ||C64||_F, computed on the host), the definition the fp32-tc contract judges by;
`ratio` is err_ours / err_cublas, and `passes_fp32_tc` what reference.judge says of it. Where the config has
a prologue, `prologue_ms` is it timed alone the same way (the product's share of ours_ms is the rest).
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from cuda_events import time_ms  # noqa: E402

from autotune.backends.reference import FP32_TC, judge, relative_error, wide_inputs  # noqa: E402
from autotune.codegen.nvrtc import compile_source  # noqa: E402
from autotune.codegen.render import render  # noqa: E402
from autotune.errors import AutotuneError  # noqa: E402
from autotune.families import FAMILIES  # noqa: E402
from autotune.space import PROLOGUE_SUFFIX, make_config, violations  # noqa: E402


def parse_shape(text: str) -> tuple[int, int, int]:
    parts = [int(x) for x in text.split("x")]
    return (parts[0], parts[0], parts[0]) if len(parts) == 1 else (parts[0], parts[1], parts[2])


def rel_err(C, ref64) -> float:
    """The contract's relative error, on host copies (one definition for the search and this file)."""
    return relative_error(C.cpu().numpy(), ref64.cpu().numpy())


def inputs(torch, kind: str, shape: tuple[int, int, int]):
    M, N, K = shape
    if kind == "wide":  # the very inputs the search verifies a tensor-core kernel on (seed 0: its default)
        return tuple(torch.from_numpy(x).cuda() for x in wide_inputs(M, N, K, 0))
    gen = torch.Generator(device="cuda").manual_seed(0)
    if kind == "uniform":
        return (torch.rand(M, K, device="cuda", generator=gen) * 2 - 1,
                torch.rand(K, N, device="cuda", generator=gen) * 2 - 1)
    return torch.randn(M, K, device="cuda", generator=gen), torch.randn(K, N, device="cuda", generator=gen)


def one_shape(torch, cp, config, kernels, shape: tuple[int, int, int], kind: str) -> dict:
    M, N, K = shape
    A, B = inputs(torch, kind, shape)
    C, ref = torch.empty(M, N, device="cuda"), torch.empty(M, N, device="cuda")
    launch = config.geometry(M, N)
    a, b, c, dims = cp.asarray(A), cp.asarray(B), cp.asarray(C), (cp.int32(M), cp.int32(N), cp.int32(K))
    stream = cp.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream)
    kernel, pre_kernel = kernels
    pre = config.prologue(M, N, K)
    work = cp.empty(pre.floats if pre else 1, dtype=cp.float32)

    def prologue() -> None:
        pre_kernel(pre.launch.grid, pre.launch.block, (a, b, work, *dims), stream=stream)

    def ours() -> None:
        if pre is None:
            kernel(launch.grid, launch.block, (a, b, c, *dims), shared_mem=launch.shared_bytes, stream=stream)
            return
        prologue()
        kernel(launch.grid, launch.block, (a, work, c, *dims), shared_mem=launch.shared_bytes, stream=stream)

    ours_ms = time_ms(torch, ours, reps=10, warmup=2)
    # the prologue alone, the same way: where the fixed cost lies (the product's share is the difference)
    phases = {"prologue_ms": round(time_ms(torch, prologue, reps=10, warmup=2), 4)} if pre is not None else {}
    cublas_ms = time_ms(torch, lambda: torch.matmul(A, B, out=ref), reps=10, warmup=2)
    ref64 = A.double() @ B.double()
    err_ours, err_cublas = rel_err(C, ref64), rel_err(ref, ref64)
    return {"M": M, "N": N, "K": K, "ours_ms": round(ours_ms, 4), "cublas_ms": round(cublas_ms, 4),
            "speedup": round(cublas_ms / ours_ms, 3), "err_ours": err_ours, "err_cublas": err_cublas,
            "ratio": err_ours / err_cublas, "passes_fp32_tc": judge(FP32_TC, err_ours, err_cublas) is None,
            "inputs": kind, **({"moduli": config.values["MODULI"]} if "MODULI" in config.values else {}),
            **({"scale": config.values["SCALE"]} if "SCALE" in config.values else {}), **phases}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--family", default="tf32x3", choices=sorted(FAMILIES))
    parser.add_argument("-p", "--param", action="append", default=[], help="NAME=VALUE")
    parser.add_argument("--shapes", default="4096,2048,8192,4000,4097x4095x4093")
    parser.add_argument("--inputs", choices=("uniform", "randn", "wide"), default="uniform")
    parser.add_argument("--out", help="write the JSON here")
    args = parser.parse_args()
    params = dict(p.split("=", 1) for p in args.param)
    family = FAMILIES[args.family]
    try:
        config = make_config(family, {k: family.param(k).parse(v) for k, v in params.items()})
    except AutotuneError as exc:  # a value outside the space: say which
        parser.exit(2, f"error: {exc}\n")
    bad = violations(config)
    if bad:
        parser.exit(2, f"error: {config} is outside the space: {bad[0]}\n")
    import cupy as cp
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    built = compile_source(render(config), config.name, f"sm_{''.join(map(str, torch.cuda.get_device_capability()))}")
    if not built.ok:
        raise SystemExit(f"NVRTC ({built.arch}): {built.log}")
    cubin = Path(tempfile.mkdtemp()) / f"{config.name}.cubin"
    cubin.write_bytes(built.cubin)
    module = cp.RawModule(path=str(cubin))
    kernel = module.get_function(config.name)
    pre_kernel = module.get_function(config.name + PROLOGUE_SUFFIX) if config.has_prologue else None
    shared = config.geometry(64, 64).shared_bytes
    if shared > 48 * 1024:
        kernel.max_dynamic_shared_size_bytes = shared
    rows = [one_shape(torch, cp, config, (kernel, pre_kernel), parse_shape(s), args.inputs) for s in args.shapes.split(",")]
    out = {"device": torch.cuda.get_device_name(), "kernel": config.name, "family": args.family,
           "params": config.values, "cublas": "torch.matmul, allow_tf32=False, same process", "shapes": rows}
    for r in rows:
        print(f"{r['M']}x{r['N']}x{r['K']}: ours {r['ours_ms']:.3f} ms, cuBLAS {r['cublas_ms']:.3f} ms "
              f"({r['speedup']:.2f}x); error vs float64 {r['err_ours']:.2e} (cuBLAS FP32 {r['err_cublas']:.2e}, "
              f"ratio {r['ratio']:.2f}: {'passes' if r['passes_fp32_tc'] else 'fails'} fp32-tc)"
              + (f"; prologue alone {r['prologue_ms']:.3f} ms" if "prologue_ms" in r else ""))
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
