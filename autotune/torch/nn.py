"""`Linear`, a drop-in for torch.nn.Linear whose product runs autotune's dispatcher, and `swap_linear`,
which puts it in place of a model's nn.Linear layers (sharing their parameters).

In eager mode with no gradient recorded (torch.no_grad(), inference_mode) a layer calls load()'s matmul
itself, bias included (mm(x, W, trans_b=True, bias=b)), which runs our kernel (then the bias's, api.bias) or
cuBLAS's addmm from its C first step; with autograd, autotune.torch.mm's autograd.Function; under
torch.compile, the operator torch.ops.autotune.mm (autotune.torch.ops). With autograd or traced, where the
dispatcher would run cuBLAS anyway (no kernel measured at the call's shape beat it), and where the kernel's
evidence is a covering row's (a host-bound call) with autograd on or, traced, with a bias (_library_at says
why), the layer runs torch.nn.functional.linear itself, exactly what nn.Linear runs (its bias fused by cuBLAS,
its backward torch's). In eager mode that choice is made once per shape and matmul; under torch.compile once,
while tracing, for the shapes traced.
"""
from __future__ import annotations

import torch
from torch import Tensor

from autotune.api.dispatch import COVERING
from autotune.errors import AutotuneError
from autotune.torch.ops import autocasting, current, mm, recorded


class Linear(torch.nn.Linear):
    """y = x W^T + b, as torch.nn.Linear (same parameters, same state_dict)."""

    def forward(self, x: Tensor) -> Tensor:
        # an input of the wrong width goes to F.linear too: its error is nn.Linear's own, word for word; so does one
        # under torch.autocast, which F.linear computes in autocast's dtype (autocasting says so, once)
        if not (x.is_cuda and x.dim() > 0 and x.shape[-1] == self.in_features) or autocasting("cuda"):
            return torch.nn.functional.linear(x, self.weight, self.bias)
        if torch.compiler.is_compiling():
            return self._traced(x)
        return self._eager(x)

    def _eager(self, x: Tensor) -> Tensor:
        """Not traced: with no gradient recorded (torch.no_grad(), inference_mode), load()'s matmul itself, bias
        included, whose first step (api.fastcall) runs a planned shape's kernel or cuBLAS from C; with autograd,
        F.linear where _library_at says so (asked once a shape: _library_memo), our product where not. (Asked at
        each call, with the weight, which requires grad even under no_grad, sending every call down the matmul's
        full path, a one-row layer call cost 68 us on the H200 against nn.Linear's 14:
        linear-layers-seed1-h200.json.)"""
        two_d = x.dim() == 2
        rows = x if two_d else x.reshape(-1, self.in_features)
        weight, bias = self.weight, self.bias
        if not recorded(x, weight, bias):  # the matmul decides: its short way holds its choice
            y = current()(rows, weight, trans_b=True, bias=bias)
        elif _library_memo(current(), rows.shape[0], self.out_features, self.in_features, x.get_device()):
            return torch.nn.functional.linear(x, weight, bias)
        else:
            y = mm(rows, weight, trans_b=True, bias=bias)  # one autograd node, the bias's gradient in its backward
        return y if two_d else y.reshape(*x.shape[:-1], self.out_features)

    def _traced(self, x: Tensor) -> Tensor:
        """Under torch.compile: F.linear or the operator torch.ops.autotune.mm, decided while tracing."""
        rows = x.reshape(-1, self.in_features)
        if _runs_library(rows, self.weight, self.bias is not None):
            return torch.nn.functional.linear(x, self.weight, self.bias)
        y = mm(rows, self.weight, trans_b=True, bias=self.bias)
        return y.reshape(*x.shape[:-1], self.out_features)


_memo: dict[tuple[int, int, int, int], bool] = {}  # _library_at's answers with autograd, per shape, for one matmul
_memo_for: list = [None]  # that matmul (use() may set another)


def _library_memo(matmul: object, M: int, N: int, K: int, device: int) -> bool:
    """_library_at's answer for a call autograd records, asked once per shape and matmul: asking costs the host
    ~8 us, as much as a host-bound call. A shape's answer is kept for the process, as torch.compile keeps it
    (first-use tuning that ends later does not change it; with F.linear the layer is nn.Linear meanwhile)."""
    if _memo_for[0] is not matmul:
        _memo.clear()
        _memo_for[0] = matmul
    key = (M, N, K, device)
    answer = _memo.get(key)
    if answer is None:
        if len(_memo) >= 4096:  # a process that calls ever new shapes keeps a bounded memo
            _memo.clear()
        answer = _memo[key] = _library_at(M, N, K, device, True)
    return answer


def _runs_library(rows: Tensor, weight: Tensor, covering_too: bool) -> bool:
    """Whether cuBLAS computes this layer's product (the layer then is nn.Linear); shapes that are symbolic
    while tracing (dynamic shapes) go to the operator, which decides per call."""
    M, K = rows.shape
    N = weight.shape[0]
    if not all(isinstance(n, int) for n in (M, N, K)):
        return False
    return _library_at(M, N, K, rows.device.index or 0, covering_too)


@torch.compiler.assume_constant_result  # torch.compile asks once, while tracing, and keeps the answer
def _library_at(M: int, N: int, K: int, device: int, covering_too: bool) -> bool:
    """Whether the layer runs F.linear at this shape: where cuBLAS computes the product anyway, and, with
    covering_too, where our kernel's evidence is a covering row's (a host-bound call). The caller passes
    covering_too where the layer's host path there costs more than F.linear's one call: with autograd (our
    autograd.Function in Python, where F.linear is one native node: such one-row layers without a bias read 0.928x
    nn.Linear on an H100, benchmarks/data/linear-layers-grad-seed1-h100.json) and, traced, with a bias (the bias's
    kernel is a second launch, where F.linear's cuBLAS call adds it in its epilogue). Not asked in eager mode
    without autograd: there load()'s matmul takes the bias itself, from C (api.bias)."""
    matmul = current()
    if matmul.runs_library(M, N, K, device, trans_b=True):
        return True
    return covering_too and matmul.choose(M, N, K, device, trans_b=True).origin == COVERING


def swap_linear(model: torch.nn.Module, _done: dict[int, torch.nn.Module] | None = None) -> torch.nn.Module:
    """Replace every torch.nn.Linear in the model (the model itself included) by a Linear that holds the
    same weight and bias Parameters, so optimizers and state_dicts see no change; returns the model. A layer held
    in two places (weight tying) gets one replacement, held in both. Subclasses of nn.Linear (LazyLinear, one
    with parametrizations) are left as they are: their forward may not be nn.Linear's."""
    if not isinstance(model, torch.nn.Module):
        raise AutotuneError(f"swap_linear takes a torch.nn.Module, not a {type(model).__name__}")
    done = {} if _done is None else _done
    if id(model) in done:
        return done[id(model)]
    if type(model) is torch.nn.Linear:
        done[id(model)] = _swapped(model)
        return done[id(model)]
    done[id(model)] = model
    for name, child in list(model._modules.items()):  # every name: named_children() yields a shared child once
        if child is not None:
            setattr(model, name, swap_linear(child, done))
    return model


def _swapped(layer: torch.nn.Linear) -> Linear:
    new = Linear(layer.in_features, layer.out_features, bias=layer.bias is not None, device="meta")
    new.weight = layer.weight
    new.bias = layer.bias
    new.train(layer.training)
    return new
