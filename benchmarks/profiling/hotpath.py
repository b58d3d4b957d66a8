"""Where a repeated torch call's host time goes: the pieces of load()'s short ways timed alone (wall clock,
many calls, no synchronisation but every `chunk` calls), and, at shapes where cuBLAS runs, which kernel
each path launches (torch.profiler) and their queued times side by side.

    python benchmarks/profiling/hotpath.py [--shapes 2048x2048x8192,1024x1024x16384] > hotpath.json
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

import autotune

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from cuda_events import paired_ms  # noqa: E402


def host_us(torch: Any, run: Callable[[], object], calls: int = 4000, chunk: int = 500, rounds: int = 5) -> float:
    for _ in range(100):
        run()
    torch.cuda.synchronize()
    best = []
    for _ in range(rounds):
        spent = 0.0
        for _ in range(calls // chunk):
            t = time.perf_counter()
            for _ in range(chunk):
                run()
            spent += time.perf_counter() - t
            torch.cuda.synchronize()
        best.append(spent / calls * 1e6)
    return round(statistics.median(best), 3)


def pieces(torch: Any, mm: Any, n: int) -> dict[str, float]:
    A, B = torch.randn(n, n, device="cuda"), torch.randn(n, n, device="cuda")
    mm(A, B)
    getter = getattr(torch._C, "_get_cublas_allow_tf32")
    table = {(A.shape, B.shape, False, False, 0): 1}
    f32 = torch.float32

    def nothing(x: Any, y: Any) -> None:
        return None

    runs = {
        "torch.matmul": lambda: torch.matmul(A, B),
        "torch.mm": lambda: torch.mm(A, B),
        "A.mm(B)": lambda: A.mm(B),
        "torch._C._VariableFunctions.mm": lambda: torch._C._VariableFunctions.mm(A, B),
        "load()": lambda: mm(A, B),
        "new_empty": lambda: A.new_empty((n, n)),
        "python call": lambda: nothing(A, B),
        "A.shape": lambda: A.shape,
        "A.get_device()": lambda: A.get_device(),
        "A.dtype is f32": lambda: A.dtype is f32,
        "tf32 getter": getter,
        "key+get": lambda: table.get((A.shape, B.shape, False, False, A.get_device())),
        "is_contiguous x2": lambda: A.is_contiguous() and B.is_contiguous(),
        "requires_grad x2": lambda: A.requires_grad or B.requires_grad,
        "data_ptr x3": lambda: (A.data_ptr(), B.data_ptr(), A.data_ptr()),
        "raw stream": lambda: torch._C._cuda_getCurrentRawStream(0),
        "current device": torch._C._cuda_getDevice,
    }
    return {name: host_us(torch, run) for name, run in runs.items()}


def kernels(torch: Any, run: Callable[[], object]) -> list[str]:
    from torch.profiler import ProfilerActivity, profile

    run()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(3):
            run()
        torch.cuda.synchronize()
    return sorted({e.key[:90] for e in prof.key_averages() if e.device_type.name == "CUDA"})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default="2048x2048x8192,1024x1024x16384,2176x2048x2048,12448x1840x2159")
    parser.add_argument("--small", default="64,63")
    args = parser.parse_args()
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    mm = autotune.load()
    out: dict[str, Any] = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "pieces": {}, "large": []}
    for n in (int(s) for s in args.small.split(",")):
        out["pieces"][n] = {"kernel": mm.choose(n, n, n).describe(), **pieces(torch, mm, n)}
        print(json.dumps({n: out["pieces"][n]}), file=sys.stderr, flush=True)
    for text in args.shapes.split(","):
        M, N, K = (int(v) for v in text.split("x"))
        A, B = torch.randn(M, K, device="cuda"), torch.randn(K, N, device="cuda")
        mm(A, B)
        row: dict[str, Any] = {"shape": [M, N, K], "choice": mm.choose(M, N, K).describe(),
                               "runs_library": mm.runs_library(M, N, K), "short_way": len(mm._fast) > 0,
                               "short_keys": [str(k) for k in mm._fast]}
        for name, run in {"torch.matmul": lambda: torch.matmul(A, B), "load()": lambda: mm(A, B),
                          "torch.mm": lambda: torch.mm(A, B)}.items():
            row[f"kernels {name}"] = kernels(torch, run)
        t, o = paired_ms(torch, lambda: torch.matmul(A, B), lambda: mm(A, B), 20, 8)
        t2, m2 = paired_ms(torch, lambda: torch.matmul(A, B), lambda: torch.mm(A, B), 20, 8)
        row.update({"matmul_ms": t, "load_ms": o, "matmul_ms_2": t2, "mm_ms": m2})
        out["large"].append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
