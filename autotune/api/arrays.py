"""What a caller's array is, read through the two protocols that device arrays share, without
importing the library that made it (torch, CuPy, numba, ...):

- DLPack (`__dlpack_device__` and `__dlpack__`): the device, then a capsule holding a DLTensor
  (data pointer, dtype, shape, strides in elements; NULL strides mean C-contiguous). A CUDA
  producer is handed the stream the kernel will run on, so that it makes the data ready on it.
- `__cuda_array_interface__` (version 3): a dict with `data` (pointer, read-only flag), `shape`,
  `typestr`, `strides` in bytes (None: C-contiguous). It names no device; the launch layer asks
  the driver which device the pointer lives on.

DLPack is asked first: it names the device itself, and it is what NumPy speaks too, so host
memory is recognised (and refused by the caller) rather than mistaken for a pointer.

A torch CUDA tensor read on its own current stream skips DLPack: torch's export costs the host
tens of microseconds a call (a chain of device queries), as much as a skinny product's kernel, and
on that stream the tensor is already ready, so there is nothing for the export to synchronise. Its
attributes name the same pointer, shape, strides and device.
"""
from __future__ import annotations

import ctypes
import sys
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable

DL_CPU, DL_CUDA, DL_CUDA_HOST, DL_CUDA_MANAGED = 1, 2, 3, 13
DEVICE_TYPES = {DL_CUDA, DL_CUDA_MANAGED}  # memory a kernel can read and write
DL_KINDS = {0: "int", 1: "uint", 2: "float", 4: "bfloat", 5: "complex", 6: "bool"}
TYPESTR_KINDS = {"i": "int", "u": "uint", "f": "float", "c": "complex", "b": "bool"}


@dataclass(frozen=True)
class ArrayView:
    """One operand as the kernels see it. strides are in elements; device is the CUDA ordinal,
    None for memory a kernel cannot use (host memory)."""

    name: str  # "A", "B" or "out": how error messages call it
    ptr: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    dtype: str  # "float32", "float64", "bfloat16", ...
    device: int | None
    library: str  # the top-level package of the array's type: "torch", "cupy", "numpy", ...
    where: str = "device memory"  # what kind of memory it is, for the host-memory error


def signature(v: ArrayView) -> tuple:
    """What a call's checks and kernel choice read of an operand: everything but its name and pointer."""
    return v.shape, v.strides, v.dtype, v.device, v.where


def span(v: ArrayView) -> tuple[int, int]:
    """The bytes an operand's elements lie in, first to one past the last (4-byte elements; negative strides
    reach below the pointer)."""
    low, high = _reach(v.shape, v.strides)
    return v.ptr + low, v.ptr + high


@lru_cache(maxsize=1024)
def _reach(shape: tuple[int, ...], strides: tuple[int, ...]) -> tuple[int, int]:
    """span's bytes below and past the pointer, per shape and strides (a repeated call only adds its pointer)."""
    reach = [(n - 1) * s for n, s in zip(shape, strides) if n > 0]
    return 4 * sum(r for r in reach if r < 0), 4 * (sum(r for r in reach if r > 0) + 1)


def library_of(x: Any) -> str:
    return type(x).__module__.partition(".")[0]


def contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= n
    return tuple(reversed(strides))


def _outside_autograd(x: Any) -> Any:
    """Under torch.no_grad() a parameter (an nn.Linear's weight) still requires grad, and DLPack
    refuses to export it, though reading it there is just what the caller asked for: its detached
    view is the same memory. With gradients on, the refusal stands (no gradient would flow back)."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor) and x.requires_grad and not torch.is_grad_enabled():
        return x.detach()
    return x


def read_array(x: Any, name: str, stream: int, device_of: Callable[[int], int | None],
               current: bool = False) -> ArrayView:
    """The view of `x`; an object that speaks neither protocol, or whose producer refuses to
    export it (a torch tensor that requires grad), is one AutotuneError. `stream` is the handle
    the kernel runs on (0: the legacy default stream); current: it is the current stream of x's
    library on x's device (a torch tensor is then read from its attributes); device_of(pointer)
    answers for `__cuda_array_interface__`, which names no device."""
    from autotune.errors import AutotuneError

    x = _outside_autograd(x)
    if current and _exportable_torch_cuda(x):
        return _from_torch(x, name)
    try:
        if hasattr(x, "__dlpack_device__") and hasattr(x, "__dlpack__"):
            return _from_dlpack(x, name, stream)
        if hasattr(x, "__cuda_array_interface__"):
            return _from_cai(x, name, device_of)
    except AutotuneError:
        raise
    except Exception as exc:  # the producer's own refusal says what to do (e.g. "use tensor.detach()")
        raise AutotuneError(f"{name} ({type(x).__name__}) cannot be read as a device array: {exc} "
                            f"(this matmul records no gradients)") from None
    raise AutotuneError(f"{name} is a {type(x).__module__}.{type(x).__name__}, not a device array: pass an array "
                        f"with __dlpack__ or __cuda_array_interface__ (a CUDA torch tensor, a CuPy array)")


def _exportable_torch_cuda(x: Any) -> bool:
    """A CUDA tensor that DLPack would export as it lies (what it refuses, it refuses with its reason)."""
    torch = sys.modules.get("torch")
    return (torch is not None and isinstance(x, torch.Tensor) and x.is_cuda and not x.requires_grad
            and not x.is_neg() and not x.is_conj())


def _from_torch(x: Any, name: str) -> ArrayView:
    dtype = str(x.dtype).removeprefix("torch.")  # float32, bfloat16, ...: DLPack's names for the float types
    return ArrayView(name, int(x.data_ptr()), tuple(x.shape), tuple(x.stride()), dtype, int(x.device.index), "torch")


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    """The head of DLManagedTensor (the unversioned capsule, "dltensor"): dlpack.h's DLTensor."""

    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def _from_dlpack(x: Any, name: str, stream: int) -> ArrayView:
    kind, index = (int(v) for v in x.__dlpack_device__())
    on_device = kind in DEVICE_TYPES
    # The consumer's stream for a CUDA producer (0 is not allowed: 1 means the legacy default
    # stream); host producers take none.
    capsule = x.__dlpack__(stream=(stream or 1)) if on_device else x.__dlpack__()
    t = ctypes.cast(_capsule_pointer(capsule, b"dltensor"), ctypes.POINTER(_DLTensor)).contents
    shape = tuple(int(t.shape[i]) for i in range(t.ndim))
    strides = tuple(int(t.strides[i]) for i in range(t.ndim)) if t.strides else contiguous_strides(shape)
    kind_name = DL_KINDS.get(t.dtype.code, f"code{t.dtype.code}")
    dtype = f"{kind_name}{t.dtype.bits}" + (f"x{t.dtype.lanes}" if t.dtype.lanes != 1 else "")
    where = "device memory" if on_device else {DL_CPU: "host memory", DL_CUDA_HOST: "pinned host memory"}.get(
        kind, f"memory of DLPack device type {kind}")
    ptr = (t.data or 0) + int(t.byte_offset)
    del capsule  # only read: the producer's deleter runs when the capsule goes; the array owns the memory
    return ArrayView(name, ptr, shape, strides, dtype, index if on_device else None, library_of(x), where)


def _from_cai(x: Any, name: str, device_of: Callable[[int], int | None]) -> ArrayView:
    from autotune.errors import AutotuneError

    cai = x.__cuda_array_interface__
    shape = tuple(int(n) for n in cai["shape"])
    typestr = cai["typestr"]
    itemsize = int(typestr[2:])
    dtype = f"{TYPESTR_KINDS.get(typestr[1], typestr[1])}{8 * itemsize}"
    if cai.get("strides") is not None:
        given = tuple(int(s) for s in cai["strides"])
        if any(s % itemsize for s in given):  # a stride between elements: no kernel can read that
            raise AutotuneError(f"{name}'s strides {given} (bytes) are not whole elements of {itemsize} bytes")
        strides = tuple(s // itemsize for s in given)
    else:
        strides = contiguous_strides(shape)
    ptr, readonly = int(cai["data"][0]), bool(cai["data"][1])
    if readonly and name == "out":
        raise AutotuneError("out is read-only (its __cuda_array_interface__ says so); pass a writable array")
    device = device_of(ptr) if ptr else None
    where = "device memory" if device is not None else "host memory (the driver knows no device for its pointer)"
    return ArrayView(name, ptr, shape, strides, dtype, device, library_of(x), where)
