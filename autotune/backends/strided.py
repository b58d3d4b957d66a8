"""The operands of a BLAS=1 call (autotune/space/blas.py) as the flat buffers a kernel reads, and
the check of what it wrote: every batch's C against alpha * op(A) * op(B) + beta * C in float64, and
every float of C's buffer outside the batches' outputs (the gaps of ldc > N) left as it was.

A and B's gaps hold NaN, so a kernel that reads past a row's end (a wrong leading dimension) shows
NaN; with beta == 0, C starts as NaN (cuBLAS's rule: beta == 0 does not read C), so a kernel that
reads it anyway, or leaves an output unwritten, shows NaN too.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from autotune.backends.reference import relative_error
from autotune.space import Operands, buffer_sizes, stored_shapes


@dataclass(frozen=True)
class Strided:
    """One call's buffers (float32, flat) and its float64 answer, (batch, M, N)."""

    A: np.ndarray
    B: np.ndarray
    C: np.ndarray
    ref: np.ndarray


def strided_inputs(M: int, N: int, K: int, ta: bool, tb: bool, ops: Operands, seed: int) -> Strided:
    """Random operands in [-1, 1] laid out as `ops` says; a batch stride of 0 shares one matrix."""
    rng = np.random.default_rng([seed, M, N, K, ops.batch])
    (ra, ca), (rb, cb) = stored_shapes(M, N, K, ta, tb)
    sizes = buffer_sizes(M, N, K, ta, tb, ops)
    a = _random(rng, ops.batch, ops.strideA, (ra, ca))
    b = _random(rng, ops.batch, ops.strideB, (rb, cb))
    c = _random(rng, ops.batch, ops.strideC, (M, N))
    bufC = np.full(sizes[2], np.nan, dtype=np.float32)
    if ops.beta != 0.0:
        _pack(bufC, c, ops.ldc, ops.strideC)
    opA = a.transpose(0, 2, 1) if ta else a
    opB = b.transpose(0, 2, 1) if tb else b
    ref = ops.alpha * (opA.astype(np.float64) @ opB.astype(np.float64))
    if ops.beta != 0.0:
        ref = ref + ops.beta * c.astype(np.float64)
    return Strided(_packed(a, sizes[0], ops.lda, ops.strideA), _packed(b, sizes[1], ops.ldb, ops.strideB), bufC, ref)


def strided_error(C: np.ndarray, given: Strided, M: int, N: int, ops: Operands) -> float:
    """The relative error of every batch's output; inf if any float outside them changed."""
    if C.shape != given.C.shape:
        return float("inf")
    outputs = np.zeros(C.shape, dtype=bool)
    _pack(outputs, np.ones((ops.batch, M, N), dtype=bool), ops.ldc, ops.strideC)
    if not np.array_equal(C[~outputs].view(np.uint32), given.C[~outputs].view(np.uint32)):
        return float("inf")
    return relative_error(unpack(C, M, N, ops.ldc, ops.strideC, ops.batch), given.ref)


def unpack(buf: np.ndarray, rows: int, cols: int, ld: int, stride: int, batch: int) -> np.ndarray:
    """(batch, rows, cols) of a flat buffer with row stride ld and batch stride `stride`."""
    return _view(buf, batch, rows, cols, ld, stride).copy()


def _view(buf: np.ndarray, batch: int, rows: int, cols: int, ld: int, stride: int) -> np.ndarray:
    """The (batch, rows, cols) elements of a flat buffer, in place (writes reach the buffer)."""
    size = buf.itemsize
    return np.lib.stride_tricks.as_strided(buf, (batch, rows, cols), (stride * size, ld * size, size))


def _random(rng: np.random.Generator, batch: int, stride: int, shape: tuple[int, int]) -> np.ndarray:
    distinct = 1 if stride == 0 else batch
    x = rng.uniform(-1.0, 1.0, size=(distinct, *shape)).astype(np.float32)
    return np.broadcast_to(x, (batch, *shape)) if distinct == 1 else x


def _packed(x: np.ndarray, size: int, ld: int, stride: int) -> np.ndarray:
    buf = np.full(size, np.nan, dtype=np.float32)
    _pack(buf, x, ld, stride)
    return buf


def _pack(buf: np.ndarray, x: np.ndarray, ld: int, stride: int) -> None:
    batch, rows, cols = x.shape
    _view(buf, batch, rows, cols, ld, stride)[...] = x  # stride 0: every batch writes the same values over one matrix
