"""The first step of every call to autotune.load()'s matmul (api.matmul.Matmul): the short way of a call kind
planned before, else the full path (Matmul._call).

A call mm(A, B) with no argument but trans_a= and trans_b= looks its short way up in `_fast` under
(A.shape, B.shape, trans_a, trans_b, A.get_device()) (api.shortcuts makes them): a TorchProduct runs
inline, torch.mm of the operands (their .mT where transposed) when A is float32 and torch's TF32 is off;
any other short way is called with (A, B) and returns the product, or None for a call it was not made for.
Every other call goes to `_call`.

Two implementations of the same steps: `_fastcall.c`, built with the package where a C compiler is at hand
(setup.py; optional), and `PyFastCall` below, which runs where it was not. On the H200's host the Python
steps cost a host-bound call 1.2-1.5 us above torch.mm, 0.7-1.2 above torch.matmul
(benchmarks/data/passthrough-h200.txt); how it is called (a class's __call__, a function, a partial) moved
that by 0.1-0.3 us. The C steps have no frame and no bytecode to run. AUTOTUNE_PURE_PYTHON=1 takes the
Python ones (to compare them).
"""
from __future__ import annotations

import inspect
import os
from typing import Any

from autotune.api.shortcuts import Launch, Shortcut, TorchProduct, bias_reader, to_kernel


class PyFastCall:
    """The steps in Python (the module's docstring); a subclass defines _call, the full path."""

    _fast: dict[tuple, Any]

    def __call__(self, A: Any, B: Any, out: Any = None, *, alpha: float = 1.0, beta: float = 0.0,
                 trans_a: bool = False, trans_b: bool = False, stream: Any = None, bias: Any = None) -> Any:
        if out is None and stream is None and alpha == 1.0 and beta == 0.0:
            try:
                way = self._fast[A.shape, B.shape, trans_a, trans_b, A.get_device()]
            except (KeyError, AttributeError):  # a kind of call not planned yet, or not a torch tensor
                way = None
            if way.__class__ is TorchProduct and bias is None:  # cuBLAS, by torch.mm: inline, what calling it would do
                mm, float32, tf32, _, _, _ = way
                if A.dtype is float32 and not tf32():
                    return mm(A.mT if trans_a else A, B.mT if trans_b else B)
            elif way is not None and (product := way(A, B) if bias is None else way(A, B, bias)) is not None:
                return product
        if bias is None:  # the full path as it was called: a subclass's _call need not know of bias
            return self._call(A, B, out, alpha=alpha, beta=beta, trans_a=trans_a, trans_b=trans_b, stream=stream)
        return self._call(A, B, out, alpha=alpha, beta=beta, trans_a=trans_a, trans_b=trans_b, stream=stream,
                          bias=bias)

    def _call(self, A: Any, B: Any, out: Any = None, *, alpha: float = 1.0, beta: float = 0.0,
              trans_a: bool = False, trans_b: bool = False, stream: Any = None, bias: Any = None) -> Any:
        raise NotImplementedError


class CallSignature:
    """inspect.signature(mm) (help(), an editor's hints): the parameters of the full path, _call, which a call
    takes; the C first step shows none of its own. On the class it is None, so inspect.signature(Matmul)
    stays the constructor's."""

    def __get__(self, instance: Any, owner: type | None = None) -> inspect.Signature | None:
        return None if instance is None else inspect.signature(instance._call)


def native() -> Any:
    """The C extension's module, or None where it was not built (or AUTOTUNE_PURE_PYTHON=1)."""
    if os.environ.get("AUTOTUNE_PURE_PYTHON") == "1":
        return None
    try:
        from autotune.api import _fastcall  # type: ignore[attr-defined]
    except ImportError:
        return None
    _fastcall.inline(TorchProduct)
    return _fastcall


def attach_aten(torch: Any) -> None:
    """Once a process plans a torch call: the C first step takes api._aten's steps (the tensors read and at::mm
    called in C++) as soon as they are built for this torch (api.aten_build: at once where cached, else once a
    build in a thread ends)."""
    global ATEN_ASKED
    if NATIVE is None or ATEN_ASKED:
        return
    ATEN_ASKED = True
    from autotune.api import aten_build

    aten_build.when_built(torch, take_aten)


def take_aten(steps: Any) -> None:
    """The C first step takes these steps from now on (api._aten's capsule)."""
    global ATEN
    NATIVE.use_aten(steps)
    ATEN = True


def compiled() -> type | None:
    """The C implementation's base class, or None where it was not built (or AUTOTUNE_PURE_PYTHON=1)."""
    module = native()
    return module.FastCall if module is not None else None


def kernel_way(torch: Any, launch: Launch, device: int, out_shape: tuple[int, ...], c: Any = None,
               swapped: bool = False, bias_launch: Launch | None = None) -> Shortcut:
    """The short way of a call that our kernel computes: api.shortcuts.to_kernel's steps, in C (the extension's
    KernelProduct, `c`: native()) where the launches can be made from C (backends.cuda.fastlaunch.PreparedLaunch.raw),
    else to_kernel's closure. In C the checks, the allocation and the driver's call run without a Python frame,
    ctypes' conversions or the launch's lock (the GIL is held throughout, and its arguments live on C's stack).
    swapped: the kernel takes B's pointer first (api.operands.swapped_shape); bias_launch: the bias's kernel
    prepared at the shape (api.bias), or None."""
    raw = getattr(launch, "raw", None)
    bias_raw = getattr(bias_launch, "raw", None)
    if c is None or raw is None or bias_launch is not None and bias_raw is None:
        return to_kernel(torch, launch, device, out_shape, swapped, bias_launch)
    r = raw()
    bias = bias_raw() if bias_raw is not None else None
    return c.KernelProduct(r.launch, r.function, r.grid, r.block, r.shared, r.shape, tuple(out_shape), device,
                           torch.float32, torch._C._cuda_getCurrentRawStream, torch._C._cuda_getDevice,
                           torch.is_grad_enabled, (launch, bias_launch), swapped,
                           (bias.function, bias.grid, bias.block, bias_reader(torch, out_shape[-1], device))
                           if bias is not None else None)


NATIVE = native()
ATEN_ASKED = False  # whether attach_aten asked for api._aten's steps in this process
ATEN = False  # whether the C first step takes them
FastCall: type = NATIVE.FastCall if NATIVE is not None else PyFastCall
