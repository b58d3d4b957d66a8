"""Probe: where load()'s cuBLAS pass-through spends host time above torch.mm, step by step, on the GPU's host.

    python benchmarks/profiling/passthrough.py

Its output on the H200 at ddb9409: benchmarks/data/passthrough-h200.txt (docs/pytorch.md).
"""
from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from cuda_events import host_us  # noqa: E402


def main():
    torch.backends.cuda.matmul.allow_tf32 = False
    import autotune
    from autotune.api import library
    from autotune.api.fastcall import FastCall, PyFastCall
    print("tf32 getter:", library.tf32_getter(torch), "; load()'s first step:", FastCall, flush=True)
    for M, N, K in [(144, 10131, 4), (9954, 21, 61), (2, 504, 3921)]:
        A, B = torch.randn(M, K, device="cuda"), torch.randn(K, N, device="cuda")
        ours = autotune.load()
        ours(A, B)
        key = (A.shape, B.shape, False, False, A.get_device())
        way = ours._fast[key]
        print(type(way), flush=True)
        steps = PyFastCall()  # the same table and full path, through the Python steps (api.fastcall)
        steps._fast, steps._call = ours._fast, ours._call  # type: ignore[method-assign]
        mm, f32, tf32 = torch.mm, torch.float32, library.tf32_getter(torch)
        table = {key: way}

        def lookup_mm():
            table[A.shape, B.shape, False, False, A.get_device()]
            return mm(A, B)

        def checks_mm():
            w = table[A.shape, B.shape, False, False, A.get_device()]
            if w.__class__ is tuple or (A.dtype is f32 and not tf32()):
                return mm(A, B)

        def sig(A, B, out=None, *, alpha=1.0, beta=0.0, trans_a=False, trans_b=False, stream=None):
            if out is None and stream is None and alpha == 1.0 and beta == 0.0:
                w = table[A.shape, B.shape, trans_a, trans_b, A.get_device()]
                m, fl, t, _, _ = w
                if A.dtype is fl and not t():
                    return m(A.mT if trans_a else A, B.mT if trans_b else B)

        runs = {"torch.mm": lambda: mm(A, B), "torch.matmul": lambda: torch.matmul(A, B),
                "lookup+mm": lookup_mm, "checks+mm": checks_mm, "sig": lambda: sig(A, B),
                "ours": lambda: ours(A, B), "ours, Python steps": lambda: steps(A, B), "way": lambda: way(A, B),
                "tf32()": tf32, "A.dtype": lambda: A.dtype, "A.shape": lambda: A.shape, "get_device": A.get_device}
        print((M, N, K), host_us(torch, runs, calls=6000, warmup=200), flush=True)


if __name__ == "__main__":
    main()
