"""Loading a config's kernels from its cubin and launching them with cuda.core: the kernel's own
launch, and before it, where the config has one (space.Prologue), its prologue's into a workspace."""
from __future__ import annotations

import ctypes
from typing import Any, NamedTuple

import numpy as np

from autotune.backends.cuda.buffers import driver_result
from autotune.backends.cuda.workspaces import Workspaces
from autotune.space import BLAS_ARGS, PROLOGUE_SUFFIX, Config, Operands


def load_kernel(cubin: bytes, name: str, dynamic_shared: int, device: int):
    from cuda.bindings import driver
    from cuda.core import ObjectCode

    kernel = ObjectCode.from_cubin(cubin, name=name).get_kernel(name)
    if dynamic_shared > 48 * 1024:  # above 48 KiB a kernel must opt in before launch
        attr = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        driver_result(driver.cuKernelSetAttribute(attr, dynamic_shared, kernel.handle, driver.CUdevice(device)))
    return kernel


class Kernels(NamedTuple):
    """A config's loaded kernel, and its prologue's kernel when it has one (space.Prologue)."""

    main: Any
    pre: Any = None


def load_kernels(cubin: bytes, config: Config, dynamic_shared: int, device: int) -> Kernels:
    pre = load_kernel(cubin, config.name + PROLOGUE_SUFFIX, 0, device) if config.has_prologue else None
    return Kernels(load_kernel(cubin, config.name, dynamic_shared, device), pre)


def launch_config(stream, kernels: Kernels, config: Config, geo, a, b, c, M: int, N: int, K: int,
                  ops: Operands | None = None, workspaces: Workspaces | None = None, poison: bool = False) -> None:
    """Every launch of the config at the shape, on the stream: with a prologue, first its kernel into
    the stream's workspace (from `workspaces`; poison: NaN-filled first, for a verification), which
    the kernel's own launch then reads as B; then the kernel's. geo: the kernel's launch."""
    pre = config.prologue(M, N, K)
    if pre is None:
        launch_kernel(stream, kernels.main, geo, a, b, c, M, N, K, ops)
        return
    if workspaces is None:
        raise ValueError(f"{config.name} has a prologue: launch_config needs its workspaces")
    with workspaces.use(int(stream.handle), pre.floats * 4, poison) as work:
        launch_kernel(stream, kernels.pre, pre.launch, a, b, work, M, N, K)
        launch_kernel(stream, kernels.main, geo, a, work, c, M, N, K, ops)


def launch_kernel(stream, kernel, geo, a, b, c, M: int, N: int, K: int, ops: Operands | None = None) -> None:
    """One launch; ops: a BLAS=1 kernel's further arguments (space.blas; geo then covers the batches)."""
    from cuda.core import LaunchConfig, launch

    cfg = LaunchConfig(grid=geo.grid, block=geo.block, shmem_size=geo.shared_bytes)
    launch(stream, cfg, kernel, a, b, c, np.int32(M), np.int32(N), np.int32(K), *blas_args(ops))


# BLAS_ARGS's C types, as cuda.core's launch (NumPy scalars) and the driver's (ctypes values) take them
NP_TYPES = {"int": np.int32, "float": np.float32, "long long": np.int64}
C_TYPES = {"int": ctypes.c_int32, "float": ctypes.c_float, "long long": ctypes.c_int64}


def launch_function(stream: int, function: Any, geo, a: int, b: int, c: int, M: int, N: int, K: int,
                    ops: Operands | None = None) -> None:
    """One launch through the driver's cuLaunchKernel, for autotune.load()'s calls: a stream handle,
    the kernel's CUfunction in the current context (kernel_function) and raw device pointers. It costs
    the host less than launch_kernel (docs/measuring.md, "Host time, queued and alone"), which matters
    where a call's kernel is short; the search times its kernels behind a head start, so it keeps
    launch_kernel."""
    from cuda.bindings import driver

    values = [ctypes.c_void_p(a), ctypes.c_void_p(b), ctypes.c_void_p(c), ctypes.c_int32(M), ctypes.c_int32(N),
              ctypes.c_int32(K)]
    if ops is not None:
        values += typed_scalars(ops, C_TYPES)
    pointers = (ctypes.c_void_p * len(values))(*(ctypes.addressof(v) for v in values))
    driver_result(driver.cuLaunchKernel(function, *geo.grid, *geo.block, geo.shared_bytes, stream,
                                        ctypes.addressof(pointers), 0))


def kernel_function(kernel: Any) -> Any:
    """The CUfunction of a loaded kernel (cuda.core's Kernel holds a CUkernel) in the current context."""
    from cuda.bindings import driver

    return driver_result(driver.cuKernelGetFunction(kernel.handle))[0]


def blas_args(ops: Operands | None) -> tuple:
    """The arguments after M, N, K of a BLAS=1 kernel, typed as BLAS_ARGS declares them (none: a plain kernel)."""
    return tuple(typed_scalars(ops, NP_TYPES)) if ops is not None else ()


def typed_scalars(ops: Operands, types: dict[str, Any]) -> list:
    """ops' scalars (the arguments after M, N, K), each made by `types` from its C type in BLAS_ARGS."""
    return [types[ctype](v) for (_, ctype), v in zip(BLAS_ARGS[6:], ops.scalars())]
