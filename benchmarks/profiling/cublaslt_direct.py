"""Probe: host cost of cuBLASLt's matmul with its algorithm chosen once (descriptors, layouts and the
heuristic's first algorithm built at the first call of a shape, no workspace), called straight through
ctypes, against torch.mm and torch.matmul at host-bound shapes, on the GPU's host. Not part of the suite.

    python benchmarks/profiling/cublaslt_direct.py

`lt_null` is the same ctypes call with a null handle (cuBLASLt returns at once): the cost of ctypes'
argument conversion alone, which a call from C does not pay.
"""
from __future__ import annotations

import ctypes
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from cuda_events import host_us, paired_ms  # noqa: E402

SHAPES = [(64, 64, 64), (144, 10131, 4), (1139, 570, 66), (20, 46, 9236), (2, 13060, 389), (2074, 2133, 2),
          (1, 689, 7472), (432, 838, 158), (512, 768, 3072)]
COMPUTE_32F, R_32F = 68, 0
DESC_TRANSA, DESC_TRANSB, PREF_MAX_WORKSPACE = 3, 4, 1


class Heuristic(ctypes.Structure):
    _fields_ = [("algo", ctypes.c_uint64 * 8), ("workspace", ctypes.c_size_t), ("state", ctypes.c_int),
                ("waves", ctypes.c_float), ("reserved", ctypes.c_int * 4)]


def lib():
    from cuda.pathfinder import load_nvidia_dynamic_lib
    L = ctypes.PyDLL(load_nvidia_dynamic_lib("cublasLt").abs_path)
    V = ctypes.c_void_p
    L.cublasLtMatmul.argtypes = [V] * 15 + [V]
    L.cublasLtMatmul.restype = ctypes.c_int
    L.cublasLtMatrixLayoutCreate.argtypes = [V, ctypes.c_int, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_int64]
    L.cublasLtMatmulDescCreate.argtypes = [V, ctypes.c_int, ctypes.c_int]
    L.cublasLtMatmulPreferenceSetAttribute.argtypes = [V, ctypes.c_int, V, ctypes.c_size_t]
    L.cublasLtMatmulAlgoGetHeuristic.argtypes = [V, V, V, V, V, V, V, ctypes.c_int, V, V]
    return L


def check(status: int, what: str) -> None:
    if status:
        raise RuntimeError(f"{what}: cuBLASLt status {status}")


class Lt:
    """C = A @ B, row-major, as cuBLASLt's column-major C^T = B^T A^T: its 'A' is our B (N x K, ld N), its
    'B' our A (K x M, ld K), C N x M, ld N."""

    def __init__(self, L, handle, M: int, N: int, K: int):
        V = ctypes.c_void_p
        self.L, self.h, self.M, self.N = L, handle, M, N
        self.desc = V()
        check(L.cublasLtMatmulDescCreate(ctypes.byref(self.desc), COMPUTE_32F, R_32F), "desc")
        self.la, self.lb, self.lc = V(), V(), V()
        check(L.cublasLtMatrixLayoutCreate(ctypes.byref(self.la), R_32F, N, K, N), "layout a")
        check(L.cublasLtMatrixLayoutCreate(ctypes.byref(self.lb), R_32F, K, M, K), "layout b")
        check(L.cublasLtMatrixLayoutCreate(ctypes.byref(self.lc), R_32F, N, M, N), "layout c")
        pref = V()
        check(L.cublasLtMatmulPreferenceCreate(ctypes.byref(pref)), "pref")
        zero = ctypes.c_size_t(0)
        check(L.cublasLtMatmulPreferenceSetAttribute(pref, PREF_MAX_WORKSPACE, ctypes.byref(zero), 8), "pref attr")
        self.result = Heuristic()
        count = ctypes.c_int(0)
        check(L.cublasLtMatmulAlgoGetHeuristic(handle, self.desc, self.la, self.lb, self.lc, self.lc, pref, 1,
                                               ctypes.byref(self.result), ctypes.byref(count)), "heuristic")
        assert count.value == 1, count.value
        self.one, self.zero = ctypes.c_float(1.0), ctypes.c_float(0.0)
        self.args = [V(self.h.value), V(self.desc.value), V(ctypes.addressof(self.one)), None, V(self.la.value), None,
                     V(self.lb.value), V(ctypes.addressof(self.zero)), None, V(self.lc.value), None, V(self.lc.value),
                     V(ctypes.addressof(self.result)), None, None, None]
        self.fn = L.cublasLtMatmul

    def __call__(self, A, B, null: bool = False):
        C = A.new_empty((self.M, self.N))
        a = self.args
        c = C.data_ptr()
        s = self.fn(None if null else a[0], a[1], a[2], B.data_ptr(), a[4], A.data_ptr(), a[6], a[7], c, a[9], c,
                    a[11], a[12], None, None, torch._C._cuda_getCurrentRawStream(0))
        if s and not null:
            raise RuntimeError(s)
        return C


def main():
    torch.backends.cuda.matmul.allow_tf32 = False
    L = lib()
    handle = ctypes.c_void_p()
    check(L.cublasLtCreate(ctypes.byref(handle)), "create")
    import autotune
    ours = autotune.load()
    for M, N, K in SHAPES:
        A, B = torch.randn(M, K, device="cuda"), torch.randn(K, N, device="cuda")
        lt = Lt(L, handle, M, N, K)
        ref = torch.mm(A, B)
        got = lt(A, B)
        torch.cuda.synchronize()
        eq = bool(torch.equal(got, ref))
        err = float((got - ref).abs().max())
        ours(A, B)
        runs = {"torch.mm": lambda: torch.mm(A, B), "torch.matmul": lambda: torch.matmul(A, B),
                "new_empty": lambda: A.new_empty((M, N)), "lt": lambda: lt(A, B),
                "lt_null": lambda: lt(A, B, null=True), "ours": lambda: ours(A, B)}
        h = host_us(torch, runs)
        q = {}
        for name in ("lt", "ours"):
            t, o = paired_ms(torch, lambda: torch.matmul(A, B), runs[name], reps=20, rounds=6)
            q[name] = round(t / o, 3)
        print((M, N, K), "host us:", h, "lt equal to torch.mm:", eq, f"max diff {err:.3g}",
              "workspace", lt.result.workspace, "torch/x queued:", q, flush=True)


if __name__ == "__main__":
    main()
