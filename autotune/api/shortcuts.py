"""The short ways of a repeated torch call (api.matmul): once a kind of call (A's and B's shapes, the
transposes, A's device) has been checked and planned through the full path, its later calls go through
a closure made for it, which checks only what the key does not hold (dtypes, contiguity, gradients,
the device torch has current, TF32) and returns None for a call it was not made for: that call takes
the full path. Two kinds:

- to_torch: cuBLAS computes the shape (api.dispatch); the call is torch.mm itself, the library the
  caller would have called, unless torch's TF32 is on (then cuBLAS runs in FP32 on the full path).
  Matmul.__call__ runs it inline (TorchProduct).
- to_kernel: our kernel computes it; the call allocates C with torch and launches through a prepared
  launch (backends.cuda.fastlaunch), with nothing of cuda.bindings or DLPack in between. Where the C
  extension built, api.fastcall.kernel_way makes the same steps in C instead (api._fastcall.KernelProduct).
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple

from autotune.api.library import tf32_getter

Shortcut = Callable[..., Any]  # (A, B[, bias]) -> C, or None: not a call of this kind
Launch = Callable[[int, int, int, int], int]  # (stream, a, b, c) -> the driver's status (0: enqueued)


class TorchProduct(NamedTuple):
    """The short way of a call that cuBLAS computes: torch.mm of the operands' views, unless A is not float32
    or torch's TF32 is on (then None: the full path). A tuple, not a closure: Matmul.__call__ runs it inline,
    which spares a Python frame and a method lookup, a part of what a call cost the host above torch.mm at
    host-bound shapes (docs/host-bound.md); called, it does the same."""

    mm: Callable[[Any, Any], Any]
    float32: Any
    tf32: Callable[[], bool]
    trans_a: bool
    trans_b: bool
    addmm: Callable[[Any, Any, Any], Any]  # with a bias: torch.addmm(bias, ...), cuBLAS's epilogue adding it

    def __call__(self, A: Any, B: Any, bias: Any = None) -> Any:
        mm, float32, tf32, trans_a, trans_b, addmm = self
        if A.dtype is not float32 or tf32():
            return None
        a, b = A.mT if trans_a else A, B.mT if trans_b else B
        if bias is None:
            return mm(a, b)
        if not bias_fits(bias, float32, b.shape[1], A.get_device()):
            return None  # the full path says what is wrong with it
        return addmm(bias, a, b)


def to_torch(torch: Any, trans_a: bool, trans_b: bool) -> TorchProduct:
    """torch's own product for calls of these transposes."""
    return TorchProduct(torch.mm, torch.float32, tf32_getter(torch), trans_a, trans_b, torch.addmm)


def bias_fits(bias: Any, float32: Any, columns: int, device: int) -> bool:
    """Whether a short way takes the call's bias as it is (api.bias.check's rules): a float32 vector of C's
    columns, contiguous, on A's device."""
    return (getattr(bias, "dtype", None) is float32 and bias.dim() == 1 and bias.shape[0] == columns
            and bias.is_contiguous() and bias.get_device() == device)


def to_kernel(torch: Any, launch: Launch, device: int, out_shape: tuple[int, ...], swapped: bool = False,
              bias_launch: Launch | None = None) -> Shortcut:
    """The plan was made for contiguous float32 operands on `device`, outside autograd (`recording`), on
    torch's current stream there; the launch needs that device's context current, so torch's current device
    must be it. swapped: the kernel takes B's pointer first (api.operands.swapped_shape). bias_launch: the
    bias's kernel prepared at the shape (api.bias), called (stream, bias, bias, C) after the product's; a
    call with a bias and none prepared takes the full path (which prepares one)."""
    float32, grad_enabled = torch.float32, torch.is_grad_enabled
    raw_stream, current_device = torch._C._cuda_getCurrentRawStream, torch._C._cuda_getDevice
    read_bias = bias_reader(torch, out_shape[-1], device)

    def run(A: Any, B: Any, bias: Any = None) -> Any:
        if (A.dtype is not float32 or B.dtype is not float32 or not A.is_contiguous() or not B.is_contiguous()
                or (A.requires_grad or B.requires_grad) and grad_enabled()
                or B.get_device() != device or current_device() != device):
            return None
        bias_ptr = None
        if bias is not None and (bias_launch is None or (bias_ptr := read_bias(bias)) is None):
            return None
        C = A.new_empty(out_shape)
        c = C.data_ptr()
        first, second = (B, A) if swapped else (A, B)
        stream = raw_stream(device)
        if launch(stream, first.data_ptr(), second.data_ptr(), c) != 0:
            return None  # not enqueued (another context current): the full path says why or succeeds
        if bias_ptr is not None and bias_launch is not None and bias_launch(stream, bias_ptr, bias_ptr, c) != 0:
            return None  # the full path computes the call again, into a C of its own
        return C

    return run


def bias_reader(torch: Any, columns: int, device: int) -> Callable[[Any], int | None]:
    """The data pointer of a bias our kernel's short way takes as it is (bias_fits, outside autograd), else None:
    to_kernel's check, and the C steps' where api._aten's are not at hand."""
    float32, grad_enabled = torch.float32, torch.is_grad_enabled

    def read(bias: Any) -> int | None:
        if not bias_fits(bias, float32, columns, device) or bias.requires_grad and grad_enabled():
            return None
        return bias.data_ptr()

    return read


def kernel_eligible(torch: Any, A: Any, B: Any) -> bool:
    """Whether a planned kernel call's operands are of the kind to_kernel takes."""
    return (isinstance(A, torch.Tensor) and isinstance(B, torch.Tensor) and A.dim() == 2 == B.dim()
            and A.is_contiguous() and B.is_contiguous() and not recording(torch, A, B)
            and A.get_device() == torch.cuda.current_device())


def recording(torch: Any, A: Any, B: Any) -> bool:
    """Whether autograd would record the product: an operand requires grad and grad mode is on. Under
    torch.no_grad() a layer's weight still requires grad, yet its product is a plain one (as torch's own is
    there), so such a call takes the short way too; the C steps (_fastcall.c, _aten.cpp) ask the same."""
    return (A.requires_grad or B.requires_grad) and torch.is_grad_enabled()
