"""cuBLAS SGEMM through ctypes: the baseline every kernel is timed against, and the reference;
DGEMM: the float64 product the fp32-tc contract measures errors against.

Pedantic math mode: no TF32 tensor cores, a plain FP32 contest. Row-major C = A*B is
computed as column-major C^T = B^T * A^T, which is the same memory.
"""
from __future__ import annotations

import ctypes
from functools import lru_cache

from autotune.errors import AutotuneError
from autotune.space import Operands

CUBLAS_OP_N = 0
CUBLAS_OP_T = 1
CUBLAS_PEDANTIC_MATH = 2  # cublasMath_t: no TF32, no reduced-precision shortcuts


@lru_cache(maxsize=1)
def _lib() -> ctypes.CDLL:
    try:
        from cuda.pathfinder import load_nvidia_dynamic_lib

        return ctypes.CDLL(load_nvidia_dynamic_lib("cublas").abs_path)
    except Exception as exc:
        raise AutotuneError(f"cuBLAS not found ({exc}): pip install 'autotune[gpu]' (nvidia-cublas)") from None


def _check(status: int, what: str) -> None:
    if status != 0:
        raise AutotuneError(f"cuBLAS {what} failed with status {status}")


class Cublas:
    def __init__(self, stream_handle: int):
        lib = _lib()
        self._lib = lib
        self._handle = ctypes.c_void_p()
        _check(lib.cublasCreate_v2(ctypes.byref(self._handle)), "create")
        _check(lib.cublasSetMathMode(self._handle, CUBLAS_PEDANTIC_MATH), "set math mode")
        _check(lib.cublasSetStream_v2(self._handle, ctypes.c_void_p(stream_handle)), "set stream")
        lib.cublasSgemm_v2.argtypes = [
            ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int,
            ctypes.POINTER(ctypes.c_float), ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_int,
            ctypes.POINTER(ctypes.c_float), ctypes.c_void_p, ctypes.c_int,
        ]
        lib.cublasDgemm_v2.argtypes = [
            ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int,
            ctypes.POINTER(ctypes.c_double), ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_int,
            ctypes.POINTER(ctypes.c_double), ctypes.c_void_p, ctypes.c_int,
        ]

    def sgemm(self, a: int, b: int, c: int, M: int, N: int, K: int) -> None:
        """C[M,N] = A[M,K] * B[K,N], row-major, device pointers as ints."""
        one, zero = ctypes.c_float(1.0), ctypes.c_float(0.0)
        status = self._lib.cublasSgemm_v2(
            self._handle, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K,
            ctypes.byref(one), b, N, a, K, ctypes.byref(zero), c, N,
        )
        _check(status, "sgemm")

    def dgemm(self, a: int, b: int, c: int, M: int, N: int, K: int) -> None:
        """The same in float64 (row-major, device pointers to doubles)."""
        one, zero = ctypes.c_double(1.0), ctypes.c_double(0.0)
        status = self._lib.cublasDgemm_v2(
            self._handle, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K,
            ctypes.byref(one), b, N, a, K, ctypes.byref(zero), c, N,
        )
        _check(status, "dgemm")

    def sgemm_strided(self, a: int, b: int, c: int, M: int, N: int, K: int, ta: bool, tb: bool, ops: Operands) -> None:
        """cublasSgemmStridedBatched with the operands of a BLAS=1 kernel (space.blas, row-major):
        as column-major, C^T = alpha * op(B)^T * op(A)^T + beta * C^T over the same memory, each
        row-major leading dimension the column-major one of the transposed view."""
        fn = self._lib.cublasSgemmStridedBatched
        fn.argtypes = [
            ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int,
            ctypes.POINTER(ctypes.c_float), ctypes.c_void_p, ctypes.c_int, ctypes.c_longlong,
            ctypes.c_void_p, ctypes.c_int, ctypes.c_longlong,
            ctypes.POINTER(ctypes.c_float), ctypes.c_void_p, ctypes.c_int, ctypes.c_longlong, ctypes.c_int,
        ]
        alpha, beta = ctypes.c_float(ops.alpha), ctypes.c_float(ops.beta)
        status = fn(self._handle, CUBLAS_OP_T if tb else CUBLAS_OP_N, CUBLAS_OP_T if ta else CUBLAS_OP_N, N, M, K,
                    ctypes.byref(alpha), b, ops.ldb, ops.strideB, a, ops.lda, ops.strideA,
                    ctypes.byref(beta), c, ops.ldc, ops.strideC, ops.batch)
        _check(status, "sgemm strided batched")

    def version(self) -> int:
        v = ctypes.c_int()
        self._lib.cublasGetVersion_v2(self._handle, ctypes.byref(v))
        return v.value
