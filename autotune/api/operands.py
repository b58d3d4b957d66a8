"""What a call asks for: C = alpha * op(A) * op(B) + beta * C, its shape, its layout and its
operands (space.blas: leading dimensions, alpha, beta, strided batches).

Every stored matrix is row-major with unit column stride: A as M x K or, trans_a, as K x M (TA=1);
B as K x N or, trans_b, as N x K (TB=1; nn.Linear's x * W^T); C as M x N. A row stride longer than
the row (a slice of a wider matrix) is the leading dimension; a 3-D array (batch, rows, cols) is a
strided batch, and a 2-D operand beside 3-D ones is shared by every batch (batch stride 0).
A call with only tight 2-D operands, alpha 1 and beta 0 runs a plain kernel (A, B, C, M, N, K);
any other runs a BLAS=1 kernel with the call's operands. What no kernel reads (column-major
matrices, negative strides) is refused with what to pass instead; nothing is copied or transposed
behind the caller's back (a hidden copy would cost as much as the product at small K and hide it
from any timing).
"""
from __future__ import annotations

import math
import numbers
import sys
from dataclasses import dataclass
from typing import Any

from autotune.api.arrays import ArrayView, span
from autotune.errors import AutotuneError
from autotune.space import Operands, Shape, check_shape, operand_problems, shape_text

FLOAT32 = "float32"


@dataclass(frozen=True)
class Layout:
    """What the dispatcher looks a kernel up by: the transposes, whether the call needs the
    cuBLAS-style signature (BLAS=1), and its batch count."""

    trans_a: bool
    trans_b: bool
    blas: bool = False
    batch: int = 1


PLAIN = Layout(False, False)  # C = A·B of tight row-major operands: the plain signature's layout


@dataclass(frozen=True)
class Call:
    """One call as the launch needs it. ops: a BLAS=1 kernel's arguments (None: the plain
    signature); out_shape: the output a call without out= allocates."""

    shape: Shape
    layout: Layout
    ops: Operands | None
    device: int
    out_shape: tuple[int, ...]


def check_scalars(alpha: Any, beta: Any, trans_a: Any, trans_b: Any) -> None:
    """alpha and beta are finite real numbers, trans_a and trans_b True or False (a numpy bool too): anything else
    is one line, where it would be a TypeError deep in the call or, for "yes", read as True."""
    for name, value in (("alpha", alpha), ("beta", beta)):
        if type(value) is float and math.isfinite(value):  # the usual case, without the ABC check's cost
            continue
        try:
            ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)
        except OverflowError:  # an int beyond any float
            ok = False
        if not ok:
            raise AutotuneError(f"{name}={value!r}: pass a finite real number (a float)")
    check_flags(trans_a, trans_b)


def check_flags(trans_a: Any, trans_b: Any) -> None:
    """trans_a and trans_b are True or False (a numpy bool too, which is no subclass of bool)."""
    numpy = sys.modules.get("numpy")
    for name, value in (("trans_a", trans_a), ("trans_b", trans_b)):
        if type(value) is not bool and not (numpy is not None and isinstance(value, numpy.bool_)):
            raise AutotuneError(f"{name}={value!r}: pass True or False")


def check_apart(c: ArrayView, *inputs: ArrayView) -> None:
    """out may not share an element with A or B: the kernels read operands while other blocks write C. Column
    blocks of one matrix (out=h[:, K:] beside A=h[:, :K]) interleave without sharing one, and are taken."""
    low, high = span(c)
    for v in inputs:
        other_low, other_high = span(v)
        if low < other_high and other_low < high and _may_share(c, v):
            raise AutotuneError(f"out shares memory with {v.name}: the product would read what it has overwritten; "
                                f"pass a separate out= (or none)")


def _may_share(x: ArrayView, y: ArrayView) -> bool:
    """Whether two views whose bytes overlap can hold one element in common: exact for 2-D views of one row
    stride and unit column stride (the columns each takes, modulo the row stride, meet or not); any other pair
    is taken to share (conservative: such calls are rare)."""
    if len(x.shape) != 2 or len(y.shape) != 2 or x.strides[1] != 1 or y.strides[1] != 1 \
            or x.strides[0] != y.strides[0] or (x.ptr - y.ptr) % 4:
        return True
    ld, shift = x.strides[0], (x.ptr - y.ptr) // 4 % x.strides[0]  # x's first column, counted in y's
    return any((shift + j) % ld < y.shape[1] for j in range(min(x.shape[1], ld)))


def describe(a: ArrayView, b: ArrayView, c: ArrayView | None, trans_a: bool, trans_b: bool,
             alpha: float, beta: float) -> Call:
    """The shape, layout, operands and device of a call, or one AutotuneError that says
    everything wrong with its operands (dtype, dimensions, shapes, strides, host memory)."""
    views = [v for v in (a, b, c) if v is not None]
    problems = [p for v in views for p in _matrix_problems(v)]
    if problems:
        raise AutotuneError("; ".join(problems))
    (ra, ca), (rb, cb) = a.shape[-2:], b.shape[-2:]
    M, K = (ca, ra) if trans_a else (ra, ca)
    K2, N = (cb, rb) if trans_b else (rb, cb)
    if K != K2:
        raise AutotuneError(f"shapes do not match: {_op('A', trans_a)} is {M}x{K} and {_op('B', trans_b)} is {K2}x{N}; "
                            f"A's columns must equal B's rows")
    batch = _batch(views)
    stacked = any(len(v.shape) == 3 for v in (a, b))
    out_shape = (batch, M, N) if stacked else (M, N)
    if c is not None and (c.shape[-2:] != (M, N) or batch > 1 and c.shape[:-2] != (batch,)):
        raise AutotuneError(f"out is {'x'.join(map(str, c.shape))} but the product is {'x'.join(map(str, out_shape))}")
    check_shape(M, N, K)
    device = _one_device(views)
    if beta != 0.0 and c is None:
        raise AutotuneError(f"beta={beta:g} reads C: pass out= (its contents are scaled by beta and the product added)")
    ldc, strideC = (_leading(c), _batch_stride(c)) if c is not None else (N, M * N if batch > 1 else 0)
    ops = Operands(_leading(a), _leading(b), ldc, float(alpha), float(beta), batch, _batch_stride(a),
                   _batch_stride(b), strideC)
    reasons = operand_problems(M, N, K, trans_a, trans_b, ops)
    if reasons:
        raise AutotuneError(f"{shape_text((M, N, K))}: " + "; ".join(reasons))
    blas = not _plain(ops, M, N, K, trans_a, trans_b)
    return Call((M, N, K), Layout(trans_a, trans_b, blas, batch), ops if blas else None, device, out_shape)


def _plain(ops: Operands, M: int, N: int, K: int, trans_a: bool, trans_b: bool) -> bool:
    """Whether a plain kernel (contiguous operands, C = A * B, one batch) computes the call."""
    tight = (ops.lda, ops.ldb, ops.ldc) == (M if trans_a else K, K if trans_b else N, N)
    return tight and ops.alpha == 1.0 and ops.beta == 0.0 and ops.batch == 1


def _op(name: str, trans: bool) -> str:
    return f"{name}.T" if trans else name


def _batch(views: list[ArrayView]) -> int:
    """The batch count: the extent of every 3-D operand that has more than one matrix."""
    counts = {v.shape[0] for v in views if len(v.shape) == 3 and v.shape[0] != 1}
    if len(counts) > 1:
        where = ", ".join(f"{v.name} has {v.shape[0]}" for v in views if len(v.shape) == 3)
        raise AutotuneError(f"the batch counts differ ({where}); give every 3-D operand the same first extent "
                            f"(or 1, or pass a 2-D matrix, to share one matrix across the batch)")
    return counts.pop() if counts else 1


def _matrix_problems(v: ArrayView) -> list[str]:
    if len(v.shape) not in (2, 3):
        return [f"{v.name} must be a 2-D matrix or a 3-D batch of them (batch, rows, cols); it has shape {v.shape}"]
    out = []
    if v.dtype != FLOAT32:
        out.append(f"{v.name} is {v.dtype}; the kernels are FP32 only: pass a float32 array")
    rows, cols = v.shape[-2:]
    row_step, col_step = v.strides[-2:]
    if cols > 1 and col_step != 1:
        if rows > 1 and row_step == 1 and col_step >= rows:
            out.append(f"{v.name} is column-major (strides {v.strides}), the transpose of a row-major matrix: "
                       f"no kernel reads that layout; pass its transpose (row-major) with the other trans_ flag, "
                       f"or {v.name}.contiguous()")
        else:
            out.append(f"{v.name} has strides {v.strides} (elements): not a matrix with a leading dimension "
                       f"(no stride is 1); pass {v.name}.contiguous()")
    elif rows > 1 and row_step < cols:
        out.append(f"{v.name} has a row stride of {row_step} for {cols} columns (rows overlap); "
                   f"pass {v.name}.contiguous()")
    if len(v.shape) == 3 and v.shape[0] > 1 and v.strides[0] < 0:
        out.append(f"{v.name} has a negative batch stride ({v.strides[0]}); pass {v.name}.contiguous()")
    return out


def _leading(v: ArrayView) -> int:
    rows, cols = v.shape[-2:]
    return v.strides[-2] if rows > 1 else cols  # one row: its stride means nothing


def _batch_stride(v: ArrayView) -> int:
    """0 for a matrix shared by every batch (2-D, or a batch extent of 1)."""
    return v.strides[0] if len(v.shape) == 3 and v.shape[0] > 1 else 0


def _one_device(views: list[ArrayView]) -> int:
    for v in views:
        if v.device is None:
            raise AutotuneError(f"{v.name} ({v.library}) is in {v.where}; the kernels read device memory only: "
                                f"pass a CUDA array (a torch tensor on 'cuda', a CuPy array)")
    devices = {v.device for v in views}
    if len(devices) > 1:
        where = ", ".join(f"{v.name} on device {v.device}" for v in views)
        raise AutotuneError(f"the operands are on different devices ({where}); put them on one")
    return views[0].device  # type: ignore[return-value]


def swapped_shape(shape: Shape, layout: Layout) -> Shape | None:
    """The row-major NN product whose operands are this plain call's swapped, memory for memory, or None. x·Wᵀ of
    one row (NT, M = 1; x stored 1 x K, W stored N x K) is W (N x K) times x read as a K x 1 column: N x 1 x K,
    whose N x 1 output lies as the call's 1 x N one. Aᵀ·b of one column (TN, N = 1; A stored K x M, b K x 1) is b
    read as a 1 x K row times A (K x M): 1 x M x K. A decoding step's x·Wᵀ of one token is of the first kind."""
    if layout.blas or layout.trans_a == layout.trans_b:
        return None
    M, N, K = shape
    if layout.trans_b and M == 1:
        return N, 1, K
    if layout.trans_a and N == 1:
        return 1, M, K
    return None
