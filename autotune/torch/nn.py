"""`Linear`, a drop-in for torch.nn.Linear whose product runs autotune's dispatcher, and `swap_linear`,
which puts it in place of a model's nn.Linear layers (sharing their parameters).

Where the dispatcher would run cuBLAS anyway (no kernel measured at the call's shape beat it), and, for a
layer with a bias, where the kernel's evidence is a covering row's (a host-bound call), the layer runs
torch.nn.functional.linear itself, exactly what nn.Linear runs (its bias fused by cuBLAS, its backward
torch's): the decision is made per shape, in eager mode at each call (a lookup) and under torch.compile
once, while tracing, for the shapes traced.
"""
from __future__ import annotations

import torch
from torch import Tensor

from autotune.api.dispatch import COVERING
from autotune.errors import AutotuneError
from autotune.torch.ops import current, mm


class Linear(torch.nn.Linear):
    """y = x W^T + b, as torch.nn.Linear (same parameters, same state_dict)."""

    def forward(self, x: Tensor) -> Tensor:
        # an input of the wrong width goes to F.linear too: its error is nn.Linear's own, word for word
        if x.is_cuda and x.dim() > 0 and x.shape[-1] == self.in_features:
            rows = x.reshape(-1, self.in_features)
            if not _runs_library(rows, self.weight, self.bias is not None):
                y = mm(rows, self.weight, trans_b=True)
                if self.bias is not None:
                    y = y + self.bias
                return y.reshape(*x.shape[:-1], self.out_features)
        return torch.nn.functional.linear(x, self.weight, self.bias)


def _runs_library(rows: Tensor, weight: Tensor, bias: bool) -> bool:
    """Whether cuBLAS computes this layer's product (the layer then is nn.Linear); shapes that are symbolic
    while tracing (dynamic shapes) go to the operator, which decides per call."""
    M, K = rows.shape
    N = weight.shape[0]
    if not all(isinstance(n, int) for n in (M, N, K)):
        return False
    return _library_at(M, N, K, rows.device.index or 0, bias)


@torch.compiler.assume_constant_result  # torch.compile asks once, while tracing, and keeps the answer
def _library_at(M: int, N: int, K: int, device: int, bias: bool) -> bool:
    matmul = current()
    if matmul.runs_library(M, N, K, device, trans_b=True):
        return True
    # A covering row's call is host-bound: our kernel wins there by the host time its short way saves (4.7-9.2 us
    # a call below torch.matmul's, docs/pytorch.md), about what the bias's own addition costs the host again,
    # while F.linear fuses the bias into its one cuBLAS call. So with a bias such calls stay nn.Linear's.
    return bias and matmul.choose(M, N, K, device, trans_b=True).origin == COVERING


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
