"""The library's side of a call (api.dispatch chose cuBLAS): on torch tensors, torch's own matmul,
which is cuBLAS on torch's current stream, the very call a torch user would have made; on other
arrays, or on a stream the caller names, cuBLAS through the launcher (pedantic FP32).

torch's matmul runs in TF32 when its user allowed that (`torch.backends.cuda.matmul.allow_tf32`);
this package promises FP32, so then cuBLAS runs through the launcher instead.
"""
from __future__ import annotations

import sys
import warnings
from typing import Any, Callable

_warned: set[str] = set()


def torch_tf32(torch: Any) -> bool:
    """Whether torch's cuBLAS calls may use TF32 now (the caller can change it at any time)."""
    return bool(tf32_getter(torch)())


def tf32_getter(torch: Any) -> Callable[[], bool]:
    """torch's own C getter where it has one: the Python property costs 1.7 us a read, the getter 0.16
    (a 64^3 product's whole call is about 13)."""
    getter = getattr(torch._C, "_get_cublas_allow_tf32", None)
    return getter if getter is not None else lambda: torch.backends.cuda.matmul.allow_tf32


def torch_of(A: Any, current: bool) -> Any:
    """The torch module when A is a torch tensor read on torch's current stream and torch computes in
    FP32; else None."""
    torch = sys.modules.get("torch")
    if torch is None or not current or not isinstance(A, torch.Tensor) or torch_tf32(torch):
        return None
    return torch


def torch_product(torch: Any, A: Any, B: Any, out: Any, alpha: float, beta: float, trans_a: bool,
                  trans_b: bool, bias: Any = None) -> Any:
    """C = alpha * op(A) * op(B) + beta * C (+ bias, added to every row) with torch (beta != 0 comes with out,
    checked before). A plain call with a bias is torch.addmm, as F.linear's: cuBLAS adds the bias itself."""
    a, b = (A.mT if trans_a else A), (B.mT if trans_b else B)
    if bias is not None and out is None and alpha == 1.0 and beta == 0.0:
        return torch.addmm(bias, a, b)
    if beta == 0.0:
        product = torch.matmul(a, b, out=out)
        product = product if alpha == 1.0 else product.mul_(alpha)
    else:
        product = out.mul_(beta).add_(torch.matmul(a, b), alpha=alpha)
    return product if bias is None else product.add_(bias)


def other_float(*arrays: Any) -> str | None:
    """The dtype of the first torch tensor among the arrays that is floating point but not float32
    (autocast's bfloat16, a float64 model); None when there is none."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    for x in arrays:
        if isinstance(x, torch.Tensor) and x.is_floating_point() and x.dtype != torch.float32:
            return str(x.dtype).removeprefix("torch.")
    return None


def torch_unchanged(A: Any, B: Any, out: Any, alpha: float, beta: float, trans_a: bool, trans_b: bool,
                    dtype: str, bias: Any = None) -> Any:
    """A product the FP32 kernels do not compute, handed to torch as it is; said once per dtype."""
    if dtype not in _warned:
        _warned.add(dtype)
        warnings.warn(f"autotune: {dtype} operands run torch.matmul unchanged (the tuned kernels are FP32 only)",
                      stacklevel=3)
    return torch_product(sys.modules["torch"], A, B, out, alpha, beta, trans_a, trans_b, bias)

