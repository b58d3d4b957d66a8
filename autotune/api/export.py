"""Export a kernel as standalone CUDA source plus a JSON launch manifest.

The manifest says everything another program needs to launch the kernel: its name, the
signature, grid and block for the recorded shape, dynamic shared memory, and what was
measured (time, TFLOP/s, % of cuBLAS, GPU).
"""
from __future__ import annotations

import json
from pathlib import Path

from autotune.errors import AutotuneError
from autotune.space import Config, Launch

SIGNATURE = "(const float* A, const float* B, float* C, int M, int N, int K)"
MEASURED = ("id", "time_ms", "time_ms_min", "time_ms_max", "tflops", "pct_cublas", "pct_peak", "cublas_ms",
            "sm_clock_mhz", "gpu_name", "gpu_uuid", "arch", "nvrtc_version", "driver_version", "created_at")


def manifest(config: Config, launch: Launch, shape: tuple[int, int, int], source_hash: str,
             row: dict | None) -> dict:
    M, N, K = shape
    return {
        "kernel": config.name,
        "family": config.family.name,
        "params": config.values,
        "signature": f'extern "C" __global__ void {config.name}{SIGNATURE}',
        "layout": "row-major FP32: C[M,N] = A[M,K] * B[K,N]",
        "shape": {"M": M, "N": N, "K": K},
        "grid": list(launch.grid),
        "block": list(launch.block),
        "dynamic_shared_bytes": launch.shared_bytes,
        "source_hash": source_hash,
        "measured": {k: row.get(k) for k in MEASURED} if row else None,
    }


def output_paths(out: str) -> tuple[Path, Path]:
    path = Path(out)
    if path.suffix != ".cu":
        raise AutotuneError(f"export file {out!r} must end in .cu (the manifest goes beside it as .json)")
    if not path.parent.is_dir():
        raise AutotuneError(f"export folder {str(path.parent)!r} does not exist; create it or choose another -o")
    return path, path.with_suffix(".json")


def write_export(out: str, source: str, info: dict) -> tuple[Path, Path]:
    cu, js = output_paths(out)
    cu.write_text(source)
    js.write_text(json.dumps(info, indent=2) + "\n")
    return cu, js
