"""What a call asks for: C = alpha * op(A) * op(B) + beta * C, its shape and its layout, and
whether a kernel exists for that layout.

The layout (transposes, alpha, beta, the leading dimensions) is part of what the dispatcher
looks a kernel up by. Today's kernels compute C = op(A) * op(B), every stored operand row-major
with contiguous rows: A as M x K (lda = K) or, trans_a, as K x M (lda = M, the kernels' TA=1);
B as K x N (ldb = N) or, trans_b, as N x K (ldb = K, TB=1; nn.Linear's x * W^T); C as M x N.
Anything else is refused with the reason and what to pass instead; nothing is copied or
transposed behind the caller's back (a hidden copy would cost as much as the product at small K
and hide it from any timing).
"""
from __future__ import annotations

from dataclasses import dataclass

from autotune.api.arrays import ArrayView
from autotune.errors import AutotuneError
from autotune.space import Shape, check_shape, shape_text

FLOAT32 = "float32"


@dataclass(frozen=True)
class Layout:
    """How the operands lie and what is computed. ld*: the row stride (leading dimension) of
    each stored operand in elements."""

    trans_a: bool
    trans_b: bool
    alpha: float
    beta: float
    lda: int
    ldb: int
    ldc: int


def plain(shape: Shape) -> Layout:
    """C = A * B, no operand transposed (the signature SIGNATURE of api.export)."""
    M, N, K = shape
    return Layout(False, False, 1.0, 0.0, lda=K, ldb=N, ldc=N)


def unsupported(layout: Layout, shape: Shape) -> list[str]:
    """Why no kernel computes this layout yet (empty: one does)."""
    M, N, K = shape
    out = []
    if layout.alpha != 1.0:
        out.append(f"alpha={layout.alpha:g}: the kernels compute C = A*B only (alpha=1, beta=0) yet; scale the result")
    if layout.beta != 0.0:
        out.append(f"beta={layout.beta:g}: no kernel accumulates into C yet (beta=0 only); add the product to C yourself")
    stored_cols = (("A", layout.lda, M if layout.trans_a else K), ("B", layout.ldb, K if layout.trans_b else N),
                   ("out", layout.ldc, N))
    for name, ld, cols in stored_cols:
        if ld != cols:
            out.append(f"{name} has a leading dimension of {ld} for {cols} columns (a slice of a wider matrix): "
                       f"kernels read contiguous rows only yet; pass {name}.contiguous()")
    return out


def describe(a: ArrayView, b: ArrayView, c: ArrayView | None, trans_a: bool, trans_b: bool,
             alpha: float, beta: float) -> tuple[Shape, Layout, int]:
    """The shape (M, N, K), the layout and the device of a call, or one AutotuneError that says
    everything wrong with its operands (dtype, dimensions, shapes, strides, host memory)."""
    views = [v for v in (a, b, c) if v is not None]
    problems = [p for v in views for p in _matrix_problems(v)]
    if problems:
        raise AutotuneError("; ".join(problems))
    (ra, ca), (rb, cb) = a.shape, b.shape
    M, K = (ca, ra) if trans_a else (ra, ca)
    K2, N = (cb, rb) if trans_b else (rb, cb)
    if K != K2:
        raise AutotuneError(f"shapes do not match: {_op('A', trans_a)} is {M}x{K} and {_op('B', trans_b)} is {K2}x{N}; "
                            f"A's columns must equal B's rows")
    if c is not None and c.shape != (M, N):
        raise AutotuneError(f"out is {'x'.join(map(str, c.shape))} but the product is {M}x{N}")
    check_shape(M, N, K)
    device = _one_device(views)
    layout = Layout(trans_a, trans_b, float(alpha), float(beta),
                    _leading(a), _leading(b), _leading(c) if c is not None else N)
    reasons = unsupported(layout, (M, N, K))
    if reasons:
        raise AutotuneError(f"{shape_text((M, N, K))}: " + "; ".join(reasons))
    return (M, N, K), layout, device


def _op(name: str, trans: bool) -> str:
    return f"{name}.T" if trans else name


def _matrix_problems(v: ArrayView) -> list[str]:
    if len(v.shape) != 2:
        return [f"{v.name} must be a 2-D matrix; it has shape {v.shape}"]
    out = []
    if v.dtype != FLOAT32:
        out.append(f"{v.name} is {v.dtype}; the kernels are FP32 only: pass a float32 array")
    rows, cols = v.shape
    row_step, col_step = v.strides
    if cols > 1 and col_step != 1:
        if rows > 1 and row_step == 1 and col_step >= rows:
            out.append(f"{v.name} is column-major (strides {v.strides}), the transpose of a row-major matrix: "
                       f"no kernel reads that layout yet; pass {v.name}.contiguous() (a row-major copy)")
        else:
            out.append(f"{v.name} has strides {v.strides} (elements): not a matrix with a leading dimension "
                       f"(no stride is 1); pass {v.name}.contiguous()")
    elif rows > 1 and row_step < cols:
        out.append(f"{v.name} has a row stride of {row_step} for {cols} columns (rows overlap); "
                   f"pass {v.name}.contiguous()")
    return out


def _leading(v: ArrayView) -> int:
    rows, cols = v.shape
    return v.strides[0] if rows > 1 else cols  # one row: its stride means nothing


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
