"""Loading a config's kernels from its cubin and launching them with cuda.core: the kernel's own
launch, and before it, where the config has one (space.Prologue), its prologue's into a workspace."""
from __future__ import annotations

import contextlib
import threading
from typing import Any, Iterator, NamedTuple

import numpy as np

from autotune.backends.cuda.buffers import NAN_BITS, driver_result
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


class Workspaces:
    """Prologue workspaces (space.Prologue), one per stream, kept for the process and grown on demand.

    Launches on one stream run in order, so each call's prologue writes its stream's workspace only
    after the previous call's kernel has read it; the lock keeps two threads that share a stream from
    interleaving their prologue and kernel. Kept, not taken from the stream-ordered pool per call:
    the device's default pool (release threshold 0) gives its memory back at each synchronization,
    and the search synchronizes after every timed run, so each run's allocation could map K*N*4 bytes
    again inside the timed region (docs/BENCHMARKS.md, session 10)."""

    def __init__(self, driver: Any = None) -> None:
        self._driver = driver  # cuda.bindings.driver (imported at first use); tests pass a fake
        self._held: dict[int, tuple[int, int]] = {}  # stream handle -> (device pointer, bytes)
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def use(self, stream_handle: int, nbytes: int, poison: bool = False) -> Iterator[int]:
        """The stream's workspace of at least nbytes, for the launches enqueued inside the block.
        poison: filled with NaN first (a verification's launch), so that a prologue which leaves some
        of it unwritten fails, whatever an earlier launch left there. Needs the stream's context
        current (driver calls)."""
        if self._driver is None:
            from cuda.bindings import driver as cuda_driver

            self._driver = cuda_driver
        driver = self._driver
        with self._lock:
            ptr, size = self._held.get(stream_handle, (0, 0))
            if size < nbytes:
                stream = driver.CUstream(stream_handle)
                if ptr:
                    driver_result(driver.cuMemFreeAsync(driver.CUdeviceptr(ptr), stream))
                    self._held.pop(stream_handle)
                (dptr,) = driver_result(driver.cuMemAllocAsync(nbytes, stream))
                ptr, size = int(dptr), nbytes
                self._held[stream_handle] = (ptr, size)
            if poison:
                stream = driver.CUstream(stream_handle)
                driver_result(driver.cuMemsetD32Async(driver.CUdeviceptr(ptr), NAN_BITS, nbytes // 4, stream))
            yield ptr


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


def blas_args(ops: Operands | None) -> tuple:
    """The arguments after M, N, K of a BLAS=1 kernel, typed as BLAS_ARGS declares them (none: a plain kernel)."""
    if ops is None:
        return ()
    types = {"int": np.int32, "float": np.float32, "long long": np.int64}
    return tuple(types[ctype](v) for (_, ctype), v in zip(BLAS_ARGS[6:], ops.scalars()))
