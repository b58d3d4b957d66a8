"""A kernel launch that costs the host as little as Python allows, for load()'s repeated calls.

cuda.bindings' cuLaunchKernel converts each of its arguments into its own wrapper types, and
launch_function builds six ctypes values and a pointer array a call: about 13 us of host time on the
H200 host, where torch.matmul's whole call is 13-17 (benchmarks/data/host-cost-h200.json). Here the
driver's cuLaunchKernel is called straight through ctypes, with the GIL held (PyDLL: no release and
re-acquire around a call that only enqueues), on an argument block built once per kind of call: a call
writes its three pointers into the block and launches. A lock keeps two threads from writing one block
at once (cuLaunchKernel copies the arguments before it returns, so the block is free again after it).
"""
from __future__ import annotations

import ctypes
import sys
import threading
from typing import Any

from autotune.space import Launch

_lib: Any = None


def _driver() -> Any:
    """libcuda's cuLaunchKernel with its argument types declared (once a process)."""
    global _lib
    if _lib is None:
        lib = ctypes.PyDLL("nvcuda.dll" if sys.platform == "win32" else "libcuda.so.1")
        fn = lib.cuLaunchKernel
        u = ctypes.c_uint
        fn.argtypes = [ctypes.c_void_p, u, u, u, u, u, u, u, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
        fn.restype = ctypes.c_int
        _lib = fn
    return _lib


class PreparedLaunch:
    """One kernel's launch at one shape, plain signature (A, B, C, M, N, K): call it with the stream
    handle and the three device pointers; it returns the driver's status (0: enqueued). The
    kernel's context (the device's primary one) must be current, as it is on a thread where torch
    last used that device; any other status leaves the call to the caller's slower path."""

    def __init__(self, function: int, launch: Launch, M: int, N: int, K: int):
        self._fn = _driver()
        self._function = ctypes.c_void_p(function)
        self._grid, self._block, self._shared = launch.grid, launch.block, launch.shared_bytes
        # every argument in an 8-byte slot: the pointers fill theirs, an int32 is read from its slot's
        # first 4 bytes, which hold its value on a little-endian host (every host CUDA runs on)
        self._slots = (ctypes.c_uint64 * 6)(0, 0, 0, M, N, K)
        base, width = ctypes.addressof(self._slots), ctypes.sizeof(ctypes.c_uint64)
        self._params = (ctypes.c_void_p * 6)(*(base + i * width for i in range(6)))
        self._lock = threading.Lock()

    def __call__(self, stream: int, a: int, b: int, c: int) -> int:
        grid, block, slots = self._grid, self._block, self._slots
        with self._lock:
            slots[0], slots[1], slots[2] = a, b, c
            return int(self._fn(self._function, grid[0], grid[1], grid[2], block[0], block[1], block[2],
                                self._shared, stream, self._params, None))
