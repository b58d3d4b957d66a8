"""Probe: host cost of cuBLAS SGEMM called straight through ctypes (a handle of our own, argument blocks built
once) against torch.mm at host-bound shapes, on the GPU's host. Not part of the suite.

    python benchmarks/profiling/cublas_direct.py

Its output on the H200 at ddb9409: benchmarks/data/cublas-direct-h200.txt (docs/pytorch.md).
"""
from __future__ import annotations

import ctypes
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from cuda_events import host_us, paired_ms  # noqa: E402

SHAPES = [(64, 64, 64), (144, 10131, 4), (1139, 570, 66), (20, 46, 9236), (9954, 21, 61), (2, 504, 3921)]


def lib():
    from cuda.pathfinder import load_nvidia_dynamic_lib
    return ctypes.PyDLL(load_nvidia_dynamic_lib("cublas").abs_path)


class Direct:
    def __init__(self, L, math: int, typed: bool, M, N, K):
        self.h = ctypes.c_void_p()
        assert L.cublasCreate_v2(ctypes.byref(self.h)) == 0
        assert L.cublasSetMathMode(self.h, math) == 0
        assert L.cublasSetStream_v2(self.h, ctypes.c_void_p(torch._C._cuda_getCurrentRawStream(0))) == 0
        self.one, self.zero = ctypes.c_float(1.0), ctypes.c_float(0.0)
        self.fn = L.cublasSgemm_v2 if not typed else ctypes.PyDLL(L._name).cublasSgemm_v2
        if typed:
            self.fn.argtypes = [ctypes.c_void_p] + [ctypes.c_int] * 5 + [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int,
                                ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int]
        self.typed = typed
        self.M, self.N, self.K = M, N, K
        self.pone, self.pzero = ctypes.addressof(self.one), ctypes.addressof(self.zero)

    def __call__(self, A, B):
        M, N, K = self.M, self.N, self.K
        C = A.new_empty((M, N))
        if self.typed:
            s = self.fn(self.h, 0, 0, N, M, K, self.pone, B.data_ptr(), N, A.data_ptr(), K, self.pzero, C.data_ptr(), N)
        else:
            V = ctypes.c_void_p
            s = self.fn(self.h, 0, 0, N, M, K, V(self.pone), V(B.data_ptr()), N, V(A.data_ptr()), K, V(self.pzero),
                        V(C.data_ptr()), N)
        if s:
            raise RuntimeError(s)
        return C


def main():
    torch.backends.cuda.matmul.allow_tf32 = False
    import autotune
    L = lib()
    for M, N, K in SHAPES:
        A, B = torch.randn(M, K, device="cuda"), torch.randn(K, N, device="cuda")
        ped = Direct(L, 2, True, M, N, K)
        dflt = Direct(L, 0, True, M, N, K)
        untyped = Direct(L, 0, False, M, N, K)
        ours = autotune.load()
        ours(A, B)
        ref = torch.mm(A, B)
        eq = {n: bool(torch.equal(f(A, B), ref)) for n, f in (("ped", ped), ("dflt", dflt), ("untyped", untyped))}
        runs = {"torch.mm": lambda: torch.mm(A, B), "torch.matmul": lambda: torch.matmul(A, B),
                "new_empty": lambda: A.new_empty((M, N)), "direct_ped": lambda: ped(A, B),
                "direct_dflt": lambda: dflt(A, B), "direct_untyped": lambda: untyped(A, B), "ours": lambda: ours(A, B)}
        h = host_us(torch, runs)
        gpu = {}
        for name in ("direct_ped", "direct_dflt", "ours"):
            t, o = paired_ms(torch, lambda: torch.matmul(A, B), runs[name], reps=20, rounds=6)
            gpu[name] = round(t / o, 3)
        print((M, N, K), "host us:", h, "equal:", eq, "torch/x queued:", gpu, flush=True)


if __name__ == "__main__":
    main()
