"""The bias of a call mm(A, B, bias=b): C = alpha * op(A) * op(B) + beta * C + b, b a vector of N floats added
to every row of C, as nn.Linear's y = x·Wᵀ + b. Where cuBLAS computes a torch call's product, torch adds it
(torch.addmm: cuBLAS's own epilogue, as F.linear's); where our kernel computes it, templates/add_bias.cu.j2 adds
it right after, on the same stream, its launch prepared and made as the product's is (from C on the short way:
a launch costs the host about a microsecond there, where torch's add_ costs several: docs/pytorch.md).
"""
from __future__ import annotations

from functools import lru_cache

from autotune.api.arrays import ArrayView
from autotune.api.operands import Call
from autotune.codegen.render import render_template, sha256
from autotune.errors import AutotuneError
from autotune.space import Launch, Limits

KERNEL = "add_bias"  # the template's kernel
THREADS = 256  # a block's threads: the template's launch bounds and geometry's block
# A grid of a few blocks per SM keeps every SM's loads in flight at any size; its grid-stride loop covers the rest
BLOCKS_PER_SM = 8


@lru_cache(maxsize=1)
def source() -> str:
    return render_template("add_bias.cu.j2", threads=THREADS)


@lru_cache(maxsize=1)
def source_hash() -> str:
    return sha256(source())


def geometry(rows: int, cols: int, limits: Limits) -> Launch:
    """The launch that adds a bias to a rows x cols product."""
    blocks = max(1, min(-(-rows * cols // THREADS), limits.sms * BLOCKS_PER_SM))
    return Launch((blocks, 1, 1), (THREADS, 1, 1), 0)


def check(bias: ArrayView, call: Call, out: ArrayView | None) -> None:
    """One AutotuneError that says everything wrong with a call's bias."""
    columns = call.out_shape[-1]
    problems = []
    if len(call.out_shape) != 2:
        problems.append("bias= takes 2-D A and B (batches: add it to the product)")
    if bias.dtype != "float32":
        problems.append(f"bias is {bias.dtype}; pass float32")
    if bias.shape != (columns,):
        problems.append(f"bias has shape {bias.shape}; pass a vector of {columns} (C's columns)")
    elif columns > 1 and bias.strides != (1,):
        problems.append(f"bias's stride is {bias.strides[0]}; pass a contiguous vector (.contiguous())")
    if bias.device is None:
        problems.append(f"bias is in {bias.where}; pass it on the GPU, as A")
    elif bias.device != call.device:
        problems.append(f"bias is on device {bias.device} and A on {call.device}; pass it on A's device")
    if out is not None and len(out.shape) == 2 and out.shape[1] > 1 and out.strides[1] != 1:
        problems.append(f"out's columns are {out.strides[1]} floats apart; pass an out whose rows are contiguous")
    if problems:
        raise AutotuneError("; ".join(problems))
