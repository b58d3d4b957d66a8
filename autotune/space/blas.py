"""The cuBLAS-style interface of BLAS=1 kernels, written once: the argument order every template,
launcher and export uses, and the operands of one call (leading dimensions, alpha, beta, batches).

Row-major, like every kernel here: A is stored M x K (TA=0) or K x M (TA=1) with row stride lda,
B is stored K x N (TB=0) or N x K (TB=1) with row stride ldb, C is M x N with row stride ldc.
Batch z (blockIdx.z, the grid's z extent is the batch count) reads A + z*strideA and B + z*strideB
and writes C + z*strideC = alpha * op(A) * op(B) + beta * C; beta == 0 does not read C (cuBLAS's
rule: C may then hold NaN). A stride of 0 broadcasts one matrix to every batch.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Mapping

from autotune.space.config import MAX_ELEMENTS, Launch, Limits, Value

# (name, C type) in the kernels' order; pointers get __restrict__ in a kernel's own signature.
BLAS_ARGS: tuple[tuple[str, str], ...] = (
    ("A", "const float*"), ("B", "const float*"), ("C", "float*"),
    ("M", "int"), ("N", "int"), ("K", "int"),
    ("lda", "int"), ("ldb", "int"), ("ldc", "int"),
    ("alpha", "float"), ("beta", "float"),
    ("strideA", "long long"), ("strideB", "long long"), ("strideC", "long long"),
)


def takes_blas(params: Mapping[str, Value]) -> bool:
    """Whether a config's kernel has the BLAS=1 signature (absent: not)."""
    return bool(params.get("BLAS", 0))


def kernel_params() -> str:
    """The parameter list of a BLAS=1 kernel."""
    return ", ".join(f"{ctype} __restrict__ {name}" if ctype.endswith("*") else f"{ctype} {name}"
                     for name, ctype in BLAS_ARGS)


@dataclass(frozen=True)
class Operands:
    """How one cuBLAS-style call lays out its operands (see the module's docstring)."""

    lda: int
    ldb: int
    ldc: int
    alpha: float = 1.0
    beta: float = 0.0
    batch: int = 1
    strideA: int = 0
    strideB: int = 0
    strideC: int = 0

    def scalars(self) -> tuple:
        """The arguments after M, N, K, in BLAS_ARGS order."""
        return (self.lda, self.ldb, self.ldc, self.alpha, self.beta, self.strideA, self.strideB, self.strideC)


def stored_shapes(M: int, N: int, K: int, ta: bool, tb: bool) -> tuple[tuple[int, int], tuple[int, int]]:
    """(rows, cols) of A and B as stored."""
    return ((K, M) if ta else (M, K)), ((N, K) if tb else (K, N))


def tight(M: int, N: int, K: int, ta: bool, tb: bool, batch: int = 1, alpha: float = 1.0,
          beta: float = 0.0) -> Operands:
    """Leading dimensions equal to the stored row lengths, batches one after another."""
    (ra, ca), (rb, cb) = stored_shapes(M, N, K, ta, tb)
    return Operands(ca, cb, N, alpha, beta, batch, ra * ca, rb * cb, M * N)


def buffer_sizes(M: int, N: int, K: int, ta: bool, tb: bool, ops: Operands) -> tuple[int, int, int]:
    """Floats of A, B and C a call with these operands spans, from the first to the last it reads."""
    (ra, ca), (rb, cb) = stored_shapes(M, N, K, ta, tb)
    last = ops.batch - 1
    return (last * ops.strideA + (ra - 1) * ops.lda + ca, last * ops.strideB + (rb - 1) * ops.ldb + cb,
            last * ops.strideC + (M - 1) * ops.ldc + N)


def operand_problems(M: int, N: int, K: int, ta: bool, tb: bool, ops: Operands, limits: Limits = Limits()) -> list[str]:
    """Why a BLAS=1 kernel cannot take these operands (empty: it can)."""
    (ra, ca), (rb, cb) = stored_shapes(M, N, K, ta, tb)
    out = [f"{label}={ld} is less than the {cols} stored columns of {what}"
           for label, ld, cols, what in (("lda", ops.lda, ca, "A"), ("ldb", ops.ldb, cb, "B"), ("ldc", ops.ldc, N, "C"))
           if ld < cols]
    if not 1 <= ops.batch <= limits.max_grid_z:
        out.append(f"batch={ops.batch} must be 1 to {limits.max_grid_z} (the grid's z extent)")
    out += [f"{label}={s} must not be negative" for label, s in
            (("strideA", ops.strideA), ("strideB", ops.strideB), ("strideC", ops.strideC)) if s < 0]
    if ops.batch > 1 and ops.strideC < (M - 1) * ops.ldc + N:
        out.append(f"strideC={ops.strideC} makes the batches' outputs overlap (at least {(M - 1) * ops.ldc + N})")
    if not out and max(ra * ops.lda, rb * ops.ldb, M * ops.ldc) > MAX_ELEMENTS:
        out.append("a matrix spans 2**31 elements or more: kernels index a matrix with int")
    return out


def batched(launch: Launch, batch: int) -> Launch:
    """A BLAS=1 kernel's launch for `batch` batches: the family's grid repeated along z."""
    x, y, z = launch.grid
    return replace(launch, grid=(x, y, z * batch))
