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
        raise AutotuneError(f"cuBLAS not found ({exc}): pip install 'sgemm-autotune[gpu]' (nvidia-cublas)") from None


def _check(status: int, what: str) -> None:
    if status != 0:
        raise AutotuneError(f"cuBLAS {what} failed with status {status}")


def _gemm_argtypes(scalar) -> list:
    """cublas{S,D}gemm_v2: handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc."""
    return [ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int,
            ctypes.POINTER(scalar), ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_int,
            ctypes.POINTER(scalar), ctypes.c_void_p, ctypes.c_int]


def _strided_argtypes() -> list:
    """cublasSgemmStridedBatched: the same with a stride after each matrix's ld, and the batch count."""
    return [ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int,
            ctypes.POINTER(ctypes.c_float), ctypes.c_void_p, ctypes.c_int, ctypes.c_longlong,
            ctypes.c_void_p, ctypes.c_int, ctypes.c_longlong,
            ctypes.POINTER(ctypes.c_float), ctypes.c_void_p, ctypes.c_int, ctypes.c_longlong, ctypes.c_int]


class Cublas:
    def __init__(self, stream_handle: int):
        lib = _lib()
        self._lib = lib
        self._handle = ctypes.c_void_p()
        _check(lib.cublasCreate_v2(ctypes.byref(self._handle)), "create")
        _check(lib.cublasSetMathMode(self._handle, CUBLAS_PEDANTIC_MATH), "set math mode")
        _check(lib.cublasSetStream_v2(self._handle, ctypes.c_void_p(stream_handle)), "set stream")
        lib.cublasSgemm_v2.argtypes = _gemm_argtypes(ctypes.c_float)
        lib.cublasDgemm_v2.argtypes = _gemm_argtypes(ctypes.c_double)
        lib.cublasSgemmStridedBatched.argtypes = _strided_argtypes()

    def __del__(self) -> None:
        """The handle, and the workspace cuBLAS keeps with it, go with the backend: a worker that moves to
        another shape (backends.worker) builds a new one in the same process."""
        handle = getattr(self, "_handle", None)  # None: __init__ failed before it was made
        if handle is not None and handle.value:
            self._lib.cublasDestroy_v2(handle)
            handle.value = None

    def set_stream(self, stream_handle: int) -> None:
        _check(self._lib.cublasSetStream_v2(self._handle, ctypes.c_void_p(stream_handle)), "set stream")

    def sgemm(self, a: int, b: int, c: int, M: int, N: int, K: int) -> None:
        """C[M,N] = A[M,K] * B[K,N], row-major, device pointers as ints."""
        self._gemm_nn(self._lib.cublasSgemm_v2, ctypes.c_float, a, b, c, M, N, K, "sgemm")

    def dgemm(self, a: int, b: int, c: int, M: int, N: int, K: int) -> None:
        """The same in float64 (row-major, device pointers to doubles)."""
        self._gemm_nn(self._lib.cublasDgemm_v2, ctypes.c_double, a, b, c, M, N, K, "dgemm")

    def _gemm_nn(self, fn, scalar, a: int, b: int, c: int, M: int, N: int, K: int, what: str) -> None:
        one, zero = scalar(1.0), scalar(0.0)
        status = fn(self._handle, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K,
                    ctypes.byref(one), b, N, a, K, ctypes.byref(zero), c, N)
        _check(status, what)

    def sgemm_strided(self, a: int, b: int, c: int, M: int, N: int, K: int, ta: bool, tb: bool, ops: Operands) -> None:
        """cublasSgemmStridedBatched with the operands of a BLAS=1 kernel (space.blas, row-major):
        as column-major, C^T = alpha * op(B)^T * op(A)^T + beta * C^T over the same memory, each
        row-major leading dimension the column-major one of the transposed view."""
        alpha, beta = ctypes.c_float(ops.alpha), ctypes.c_float(ops.beta)
        status = self._lib.cublasSgemmStridedBatched(
            self._handle, CUBLAS_OP_T if tb else CUBLAS_OP_N, CUBLAS_OP_T if ta else CUBLAS_OP_N, N, M, K,
            ctypes.byref(alpha), b, ops.ldb, ops.strideB, a, ops.lda, ops.strideA,
            ctypes.byref(beta), c, ops.ldc, ops.strideC, ops.batch)
        _check(status, "sgemm strided batched")

    def version(self) -> int:
        v = ctypes.c_int()
        self._lib.cublasGetVersion_v2(self._handle, ctypes.byref(v))
        return v.value
