"""A kernel launch that costs the host as little as Python allows, for load()'s repeated calls.

cuda.bindings' cuLaunchKernel converts each of its arguments into its own wrapper types, and
launch_function builds six ctypes values and a pointer array a call: with C's allocation, 11.8-17.1 us of
host time on the H200 host, where torch.matmul's whole call is 13.2-23.6 and this short way's 10.7-14.3
(benchmarks/data/host-cost-h200.json). Here the
driver is called straight through ctypes, with the GIL held (PyDLL: no release and re-acquire around a
call that only enqueues), on blocks built once per kind of call: the launch's configuration (grid,
block, shared memory, stream) and the kernel's arguments. A call writes the stream and its three
pointers into them and calls cuLaunchKernelEx, whose four arguments ctypes converts in about a third of
the time it takes for cuLaunchKernel's eleven (where a driver lacks it, cuLaunchKernel is called). A lock
keeps two threads from writing the blocks at once (the driver copies both before it returns, so they
are free again after).
"""
from __future__ import annotations

import ctypes
import sys
import threading
from typing import Any, NamedTuple

from autotune.space import Launch

_lib: Any = None


class LaunchConfig(ctypes.Structure):
    """The driver's CUlaunchConfig, with no launch attributes."""

    _fields_ = [("grid", ctypes.c_uint * 3), ("block", ctypes.c_uint * 3), ("shared", ctypes.c_uint),
                ("stream", ctypes.c_void_p), ("attrs", ctypes.c_void_p), ("attr_count", ctypes.c_uint)]


def _driver() -> tuple[Any, Any]:
    """libcuda's cuLaunchKernelEx (None where the driver predates it) and cuLaunchKernel, their argument
    types declared (once a process)."""
    global _lib
    if _lib is None:
        lib = ctypes.PyDLL("nvcuda.dll" if sys.platform == "win32" else "libcuda.so.1")
        ex = getattr(lib, "cuLaunchKernelEx", None)
        if ex is not None:
            ex.argtypes = [ctypes.c_void_p] * 4
            ex.restype = ctypes.c_int
        plain = lib.cuLaunchKernel
        u = ctypes.c_uint
        plain.argtypes = [ctypes.c_void_p, u, u, u, u, u, u, u, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
        plain.restype = ctypes.c_int
        _lib = (ex, plain)
    return _lib


class RawLaunch(NamedTuple):
    """A prepared launch as C takes it (PreparedLaunch.raw)."""

    launch: int  # cuLaunchKernel's address
    function: int
    grid: tuple[int, ...]
    block: tuple[int, ...]
    shared: int
    shape: tuple[int, int, int]  # M, N, K


class PreparedLaunch:
    """One kernel's launch at one shape, plain signature (A, B, C, M, N, K): call it with the stream
    handle and the three device pointers; it returns the driver's status (0: enqueued). The
    kernel's context (the device's primary one) must be current, as it is on a thread where torch
    last used that device; any other status leaves the call to the caller's slower path."""

    def __init__(self, function: int, launch: Launch, M: int, N: int, K: int):
        self._ex, self._plain = _driver()
        self._function = function
        self._config = LaunchConfig(tuple(launch.grid), tuple(launch.block), launch.shared_bytes, None, None, 0)
        self._config_ptr = ctypes.addressof(self._config)
        self._grid, self._block, self._shared = launch.grid, launch.block, launch.shared_bytes
        self._shape = (M, N, K)
        # every argument in an 8-byte slot: the pointers fill theirs, an int32 is read from its slot's
        # first 4 bytes, which hold its value on a little-endian host (every host CUDA runs on)
        self._slots = (ctypes.c_uint64 * 6)(0, 0, 0, M, N, K)
        base, width = ctypes.addressof(self._slots), ctypes.sizeof(ctypes.c_uint64)
        self._params = (ctypes.c_void_p * 6)(*(base + i * width for i in range(6)))
        self._params_ptr = ctypes.addressof(self._params)
        self._lock = threading.Lock()

    def raw(self) -> RawLaunch:
        """The same launch for a caller in C (api._fastcall.KernelProduct), which makes it itself: cuLaunchKernel's
        address, the function, grid, block, shared bytes and (M, N, K). The driver keeps the address valid while
        the process runs; this object holds whatever else it points at."""
        address = ctypes.cast(self._plain, ctypes.c_void_p).value
        assert address, "cuLaunchKernel has an address once the driver is loaded"
        return RawLaunch(address, self._function, tuple(self._grid), tuple(self._block), self._shared, self._shape)

    def __call__(self, stream: int, a: int, b: int, c: int) -> int:
        slots = self._slots
        with self._lock:
            slots[0], slots[1], slots[2] = a, b, c
            if self._ex is not None:
                self._config.stream = stream
                return int(self._ex(self._config_ptr, self._function, self._params_ptr, None))
            grid, block = self._grid, self._block
            return int(self._plain(self._function, grid[0], grid[1], grid[2], block[0], block[1], block[2],
                                   self._shared, stream, self._params, None))
