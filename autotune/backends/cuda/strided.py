"""A BLAS=1 kernel on the GPU with cuBLAS-style operands (space.blas: leading dimensions, alpha,
beta, strided batches), checked against cublasSgemmStridedBatched called with the very same
buffers and arguments: the operands laid out by backends.strided (NaN in the gaps of A and B, and
all of C's first contents NaN when beta == 0), the outputs compared on the host, and every float
of C's buffer outside the batches' outputs required unchanged.
"""
from __future__ import annotations

import numpy as np

from autotune.backends.cuda.backend import download, upload, upload_into
from autotune.backends.cuda.cublas import Cublas
from autotune.backends.cuda.launch import launch_kernel
from autotune.backends.strided import Strided, strided_error, strided_inputs, unpack
from autotune.space import Config, Operands, batched


class StridedProblem:
    """Device copies of one call's buffers, cuBLAS's answer with the same operands, and C reset
    to its first contents before each launch (beta != 0 reads it)."""

    def __init__(self, dev, stream, blas: Cublas, M: int, N: int, K: int, ta: bool, tb: bool, ops: Operands, seed: int):
        self.M, self.N, self.K, self.ops, self.stream = M, N, K, ops, stream
        self.given = strided_inputs(M, N, K, ta, tb, ops, seed)
        self.a, self.b = upload(dev, stream, self.given.A), upload(dev, stream, self.given.B)
        self.c = upload(dev, stream, self.given.C)
        blas.sgemm_strided(int(self.a.handle), int(self.b.handle), int(self.c.handle), M, N, K, ta, tb, ops)
        self.cublas = download(stream, self.c, 1, self.given.C.size)[0]  # C's buffer after cuBLAS, as run() returns
        self.by_cublas = Strided(self.given.A, self.given.B, self.given.C,  # cuBLAS's output as the answer
                                 unpack(self.cublas, M, N, ops.ldc, ops.strideC, ops.batch))

    def reset(self) -> None:
        upload_into(self.stream, self.c, self.given.C)

    def run(self, kernel, config: Config) -> np.ndarray:
        """C's buffer after one launch of the kernel."""
        self.reset()
        launch = batched(config.geometry(self.M, self.N), self.ops.batch)
        launch_kernel(self.stream, kernel, launch, self.a, self.b, self.c, self.M, self.N, self.K, self.ops)
        return download(self.stream, self.c, 1, self.given.C.size)[0]

    def errors(self, C: np.ndarray) -> tuple[float, float]:
        """C's error against cuBLAS's output and against the float64 answer; inf where a float
        outside the batches' outputs changed."""
        return (strided_error(C, self.by_cublas, self.M, self.N, self.ops),
                strided_error(C, self.given, self.M, self.N, self.ops))
