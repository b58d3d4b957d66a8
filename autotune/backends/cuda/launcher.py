"""The device side of `autotune.load()`'s matmul (api.matmul.Launcher): NVRTC for the device's
own architecture through the cubin cache (codegen.nvrtc), the kernel loaded as the search loads
it (backend.load_kernel: opted in above 48 KiB of dynamic shared memory), and launched with
the driver's cuLaunchKernel on the caller's stream (launch.launch_function), on raw device pointers
the caller's library owns.
"""
from __future__ import annotations

import contextlib
from typing import Any, Iterator

from autotune.backends.cuda.backend import required_kernel
from autotune.backends.cuda.cublas import Cublas
from autotune.backends.cuda.device import device_info
from autotune.backends.cuda.fastlaunch import PreparedLaunch
from autotune.backends.cuda.launch import kernel_function, launch_function
from autotune.backends.cuda.workspaces import Workspaces
from autotune.errors import AutotuneError, NoDeviceError
from autotune.space import Launch, Limits, Operands


class CudaLauncher:
    def __init__(self) -> None:
        try:  # no GPU (or no driver) is one clear error now, not a failure at the first call
            device_info(0)
        except NoDeviceError:  # NO_GPU's advice is the command line's (--backend sim): none of it fits here
            raise NoDeviceError("no CUDA device found: load() runs its kernels on an NVIDIA GPU (its `backend` "
                                "only picks whose recorded rows to read); run it on a machine with a GPU and "
                                "driver") from None
        self._functions: dict[tuple[int, int], Any] = {}  # (device, CUkernel) -> its CUfunction there
        self._primary: dict[int, Any] = {}
        self._workspaces: dict[int, Workspaces] = {}  # per device: prologues' workspaces, one per stream
        self._cublas: dict[int, Cublas] = {}  # per device: one handle, pointed at each call's stream

    def device_name(self, device: int) -> str:
        return device_info(device).name

    def limits(self, device: int) -> Limits:
        return device_info(device).limits

    def device_of(self, ptr: int) -> int | None:
        from cuda.bindings import driver

        attr = driver.CUpointer_attribute
        err, kind = driver.cuPointerGetAttribute(attr.CU_POINTER_ATTRIBUTE_MEMORY_TYPE, ptr)
        if err != driver.CUresult.CUDA_SUCCESS or int(kind) == int(driver.CUmemorytype.CU_MEMORYTYPE_HOST):
            return None  # memory the driver does not know (plain host memory), or pinned host memory
        err, ordinal = driver.cuPointerGetAttribute(attr.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptr)
        return int(ordinal) if err == driver.CUresult.CUDA_SUCCESS else None

    def load(self, device: int, source: str, kernel: str, shared_bytes: int) -> Any:
        with self._current(device):
            return required_kernel(source, kernel, device_info(device).arch, shared_bytes, device)

    def launch(self, device: int, kernel: Any, launch: Launch, stream: int, a: int, b: int, c: int,
               shape: tuple[int, int, int], ops: Operands | None = None) -> None:
        with self._current(device):
            launch_function(stream, self._function(device, kernel), launch, a, b, c, *shape, ops)

    def prepare(self, device: int, kernel: Any, launch: Launch, shape: tuple[int, int, int]) -> PreparedLaunch:
        with self._current(device):
            return PreparedLaunch(int(self._function(device, kernel)), launch, *shape)

    def gemm(self, device: int, stream: int, a: int, b: int, c: int, shape: tuple[int, int, int], trans_a: bool,
             trans_b: bool, ops: Operands) -> None:
        with self._current(device):
            handle = self._cublas.get(device)
            if handle is None:
                handle = self._cublas[device] = Cublas(stream)
            handle.set_stream(stream)
            handle.sgemm_strided(a, b, c, *shape, trans_a, trans_b, ops)

    @contextlib.contextmanager
    def workspace(self, device: int, nbytes: int, stream: int) -> Iterator[int]:
        """The stream's workspace on the device (launch.Workspaces), with the device's primary context
        current for the launches inside the block."""
        with self._current(device):
            with self._workspaces.setdefault(device, Workspaces()).use(stream, nbytes) as ptr:
                yield ptr

    def _function(self, device: int, kernel: Any) -> Any:
        key = (device, int(kernel.handle))
        function = self._functions.get(key)
        if function is None:
            function = self._functions[key] = kernel_function(kernel)
        return function

    @contextlib.contextmanager
    def _current(self, device: int) -> Iterator[None]:
        """The device's primary context (the one torch and CuPy use) current for the launch; the
        caller's own current context put back after."""
        from cuda.bindings import driver

        primary = self._primary.get(device)
        if primary is None:
            err, primary = driver.cuDevicePrimaryCtxRetain(driver.CUdevice(device))
            if err != driver.CUresult.CUDA_SUCCESS:
                raise AutotuneError(f"cannot use device {device}: {err}")
            self._primary[device] = primary
        _, before = driver.cuCtxGetCurrent()
        if int(before) == int(primary):
            yield
            return
        driver.cuCtxSetCurrent(primary)
        try:
            yield
        finally:
            if int(before):
                driver.cuCtxSetCurrent(before)
