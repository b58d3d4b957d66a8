"""autotune's matmul as a PyTorch operator, `torch.ops.autotune.mm(a, b, trans_a, trans_b, bias)`, with a
fake (meta) implementation, so that torch.compile traces it and CUDA graphs capture it, and with
autograd, whose two backward products go through the same dispatcher as the forward one (a bias's
gradient is the sum of dC's rows).

`mm(a, b)` is what models call: in eager mode with no gradient to record it calls the process's
matmul directly (an operator's dispatch costs the host microseconds that a small product cannot
hide); in eager mode under autograd an autograd.Function with the operator's backward products; under
torch.compile the operator. On CPU tensors both compute with torch's own product, a stand-in that lets
their wiring (fake, autograd, compile) be checked on a machine with no GPU.
"""
from __future__ import annotations

import threading
import warnings
from typing import Any

import torch
from torch import Tensor

from autotune.api.library import torch_product
from autotune.api.matmul import Matmul
from autotune.api.python import load
from autotune.errors import AutotuneError

_matmul: list[Matmul] = []  # the process's matmul, loaded at first use (use() replaces it)
_lock = threading.Lock()


def use(matmul: Matmul | None = None, **load_options: Any) -> Matmul:
    """Set the matmul that `mm`, the operator and `Linear` run: the one given, else autotune.load(**load_options)."""
    if matmul is not None and (load_options or not isinstance(matmul, Matmul)):
        raise AutotuneError("use() takes a matmul that autotune.load() returned, or load()'s options, not both"
                            if load_options else f"use({type(matmul).__name__}): pass what autotune.load() returned")
    chosen = matmul if matmul is not None else load(**load_options)
    with _lock:
        _matmul[:] = [chosen]
    return chosen


def current() -> Matmul:
    """The process's matmul: the one `use` set, else autotune.load() with its defaults."""
    if not _matmul:
        with _lock:
            if not _matmul:
                _matmul.append(load())
    return _matmul[0]


def _product(a: Tensor, b: Tensor, trans_a: bool, trans_b: bool, bias: Tensor | None) -> Tensor:
    """op(a) @ op(b) (+ bias), no gradient recorded: the process's matmul, or on CPU tensors torch's product (the
    stand-in)."""
    if a.is_cuda:
        return current()(a, b, trans_a=trans_a, trans_b=trans_b, bias=bias)  # checks its operands itself
    _check(a, b, trans_a, trans_b, bias)
    product = torch.matmul(a.mT if trans_a else a, b.mT if trans_b else b)
    return product if bias is None else product + bias


@torch.library.custom_op("autotune::mm", mutates_args=())
def mm_op(a: Tensor, b: Tensor, trans_a: bool = False, trans_b: bool = False, bias: Tensor | None = None) -> Tensor:
    return _product(a, b, trans_a, trans_b, bias)


@mm_op.register_fake
def _fake(a: Tensor, b: Tensor, trans_a: bool = False, trans_b: bool = False,
          bias: Tensor | None = None) -> Tensor:
    torch._check(a.dim() == 2 and b.dim() == 2, lambda: "autotune::mm takes 2-D tensors")
    torch._check(a.shape[0 if trans_a else 1] == b.shape[1 if trans_b else 0],
                 lambda: f"autotune::mm: inner sizes differ ({tuple(a.shape)}, {tuple(b.shape)}, "
                         f"trans_a={trans_a}, trans_b={trans_b})")
    M = a.shape[1] if trans_a else a.shape[0]
    N = b.shape[0] if trans_b else b.shape[1]
    if bias is not None:
        torch._check(bias.dim() == 1 and bias.shape[0] == N,
                     lambda: f"autotune::mm: bias is {tuple(bias.shape)}; pass a vector of C's {N} columns")
    return a.new_empty((M, N))


def _setup(ctx: Any, inputs: tuple, output: Tensor) -> None:
    a, b, ctx.trans_a, ctx.trans_b, _ = inputs
    ctx.save_for_backward(a, b)


def _backward(ctx: Any, grad: Tensor) -> tuple[Tensor | None, ...]:
    a, b = ctx.saved_tensors
    needs = ctx.needs_input_grad  # as many as the arguments the call passed: a bias left to its default is not one
    gradients = (*_gradients(mm_op, a, b, ctx.trans_a, ctx.trans_b, grad, needs[:2]), None, None,
                 _bias_gradient(grad, len(needs) > 4 and needs[4]))
    return gradients[:len(needs)]


def _bias_gradient(grad: Tensor, needed: bool) -> Tensor | None:
    """C = P + bias adds the bias to every row, so its gradient is the sum of dC's rows."""
    return grad.sum(0) if needed else None


def _gradients(product: Any, a: Tensor, b: Tensor, ta: bool, tb: bool, grad: Tensor,
               needs: tuple[bool, bool]) -> tuple[Tensor | None, Tensor | None]:
    """With C = op(A) op(B): dop(A) = dC op(B)^T and dop(B) = op(A)^T dC, each written as one product(x, y,
    trans_x, trans_y) of the operands as they are stored (no transpose is materialised)."""
    g = grad.contiguous()  # a broadcast or transposed gradient: the kernels read row-major matrices
    da = db = None
    if needs[0]:  # A stored M x K: dC op(B)^T; stored K x M: its transpose, op(B) dC^T
        da = product(b, g, tb, True) if ta else product(g, b, False, not tb)
    if needs[1]:  # B stored K x N: op(A)^T dC; stored N x K: its transpose, dC^T op(A)
        db = product(g, a, True, ta) if tb else product(a, g, not ta, False)
    return da, db


mm_op.register_autograd(_backward, setup_context=_setup)


class _Recorded(torch.autograd.Function):
    """The product with autograd, in eager mode, in place of the operator, whose autograd is dispatched in Python
    at several times this one's host cost a call. Its forward runs with no gradient recorded (autograd.Function's
    rule), so the matmul takes its short way; its backward's products go through mm, so they record a gradient
    again only where one is asked (backward(create_graph=True))."""

    @staticmethod
    def forward(ctx: Any, a: Tensor, b: Tensor, trans_a: bool, trans_b: bool, bias: Tensor | None) -> Tensor:
        ctx.save_for_backward(a, b)
        ctx.trans_a, ctx.trans_b = trans_a, trans_b
        return _product(a, b, trans_a, trans_b, bias)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor | None, Tensor | None, None, None, Tensor | None]:
        a, b = ctx.saved_tensors
        needs = ctx.needs_input_grad

        def product(x: Tensor, y: Tensor, trans_x: bool, trans_y: bool) -> Tensor:
            return mm(x, y, trans_a=trans_x, trans_b=trans_y)

        return (*_gradients(product, a, b, ctx.trans_a, ctx.trans_b, grad, needs[:2]), None, None,
                _bias_gradient(grad, needs[4]))


def mm(a: Tensor, b: Tensor, *, trans_a: bool = False, trans_b: bool = False, bias: Tensor | None = None) -> Tensor:
    """op(a) @ op(b) (+ bias) for 2-D tensors (trans_b=True: a @ b.T with b stored N x K, nn.Linear's weight; bias:
    a vector of C's N columns added to every row, nn.Linear's bias)."""
    if not isinstance(a, Tensor) or not isinstance(b, Tensor):
        raise AutotuneError(f"autotune.torch.mm takes torch tensors, not {type(a).__name__} and {type(b).__name__} "
                            f"(autotune.load() returns a matmul that takes any DLPack or CUDA-array-interface array)")
    if a.dim() != 2 or b.dim() != 2:
        raise AutotuneError(f"autotune.torch.mm takes 2-D tensors; got {tuple(a.shape)} and {tuple(b.shape)} "
                            f"(reshape a batch of rows to one matrix, as autotune.torch.Linear does)")
    if autocasting("cuda" if a.is_cuda else a.device.type):
        _check_sizes(a, b, trans_a, trans_b)  # dtypes as torch judges them: autocast mixes them
        # torch.matmul, or with a bias torch.addmm: both cast to autocast's dtype (an addition after the product
        # would promote the result back to float32)
        return torch_product(torch, a, b, None, 1.0, 0.0, trans_a, trans_b, bias)
    if torch.compiler.is_compiling():  # traced: the operator (its fake implementation sees the shapes)
        return torch.ops.autotune.mm(a, b, trans_a, trans_b, bias)
    records = recorded(a, b, bias)
    if a.is_cuda and not records:
        return current()(a, b, trans_a=trans_a, trans_b=trans_b, bias=bias)  # checks its operands itself
    _check(a, b, trans_a, trans_b, bias)  # once here, not deep in a dispatch
    if records:
        return _Recorded.apply(a, b, trans_a, trans_b, bias)
    return torch.ops.autotune.mm(a, b, trans_a, trans_b, bias)  # CPU tensors: the stand-in


_said_autocast = [False]


def autocasting(device_type: str) -> bool:
    """Whether torch.autocast is on for the device type ("cuda"): there torch computes a product in autocast's lower
    precision (what nn.Linear returns there, in bfloat16 or float16), which the tuned FP32 kernels do not;
    autotune.torch then runs torch's own product, and says so once."""
    if not torch.is_autocast_enabled(device_type):
        return False
    # Dynamo cannot trace warnings.warn; asked first, so that a traced graph does not guard on the flag either
    if not torch.compiler.is_compiling() and not _said_autocast[0]:
        _said_autocast[0] = True
        warnings.warn("autotune: under torch.autocast, autotune.torch runs torch's own products, in autocast's dtype "
                      "(the tuned kernels are FP32 only)", stacklevel=3)
    return True


def recorded(a: Tensor, b: Tensor, bias: Any) -> bool:
    """Whether autograd records a product of these (autotune.torch.mm's, a Linear's): grad mode on, and an operand
    or the bias requires grad (under torch.no_grad() a layer's weight requires grad, yet its product is a plain one,
    as api.shortcuts.recording says for load()'s short way)."""
    return torch.is_grad_enabled() and (a.requires_grad or b.requires_grad
                                        or isinstance(bias, Tensor) and bias.requires_grad)


def _check(a: Tensor, b: Tensor, trans_a: Any, trans_b: Any, bias: Any = None) -> None:
    """What torch would refuse deep in its dispatch, or the operator's schema cast, as one line."""
    _check_sizes(a, b, trans_a, trans_b)
    if a.dtype != b.dtype or a.device != b.device:
        raise AutotuneError(f"a is {a.dtype} on {a.device} and b {b.dtype} on {b.device}: pass both of one dtype "
                            f"on one device")
    if bias is not None:
        _check_bias(bias, a, b.shape[0 if trans_b else 1])


def _check_sizes(a: Tensor, b: Tensor, trans_a: Any, trans_b: Any) -> None:
    """The flags, and two matrices whose inner sizes agree."""
    if not isinstance(trans_a, bool) or not isinstance(trans_b, bool):
        raise AutotuneError(f"trans_a and trans_b are True or False, not {trans_a!r} and {trans_b!r}")
    if a.dim() != 2 or b.dim() != 2:  # the operator called directly: mm checked this already
        raise AutotuneError(f"autotune::mm takes 2-D tensors; got {tuple(a.shape)} and {tuple(b.shape)}")
    k_a, k_b = a.shape[0 if trans_a else 1], b.shape[1 if trans_b else 0]
    if k_a != k_b:
        raise AutotuneError(f"op(a) is {a.shape[int(trans_a)]}x{k_a} and op(b) {k_b}x{b.shape[1 - trans_b]} "
                            f"(trans_a={trans_a}, trans_b={trans_b}): their inner sizes must be equal")


def _check_bias(bias: Any, a: Tensor, N: int) -> None:
    """A bias is a vector of C's N columns, of the operands' dtype and device (api.bias.check says the same of the
    matmul's own calls)."""
    if not isinstance(bias, Tensor):
        raise AutotuneError(f"bias is a {type(bias).__name__}; pass a torch tensor of C's {N} columns, or None")
    if bias.dim() != 1 or bias.shape[0] != N or bias.dtype != a.dtype or bias.device != a.device:
        raise AutotuneError(f"bias is {tuple(bias.shape)} {bias.dtype} on {bias.device}; pass a vector of C's {N} "
                            f"columns, {a.dtype} on {a.device}")
