"""NVML in-process, through ctypes: the library ships with the driver (libnvidia-ml.so.1, beside
libcuda), so nothing is installed for it and a call costs microseconds, not an nvidia-smi process.
Loaded once per process; a machine without it, or a device it does not know, answers None, and each
reader (device.sm_clock_mhz, energy.Meter) then goes without."""
from __future__ import annotations

import ctypes
from typing import Any

LIBRARY = "libnvidia-ml.so.1"
SUCCESS = 0
# "lib": the loaded library (a ctypes.CDLL) or None where it is missing or nvmlInit fails;
# a UUID: its device handle (ctypes.c_void_p) or None where NVML does not know the device
_NVML: dict[str, Any] = {}


def library() -> Any | None:
    """The initialised library, or None (loaded and initialised at the first call only)."""
    if "lib" not in _NVML:
        try:
            lib = ctypes.CDLL(LIBRARY)
            _NVML["lib"] = lib if lib.nvmlInit_v2() == SUCCESS else None
        except (OSError, AttributeError):
            _NVML["lib"] = None
    return _NVML["lib"]


def handle(uuid: str) -> ctypes.c_void_p | None:
    """NVML's handle of the device with this UUID (CUDA's "GPU-..." or bare), or None."""
    lib = library()
    if lib is None:
        return None
    if uuid not in _NVML:
        found = ctypes.c_void_p()
        name = ("GPU-" + uuid.removeprefix("GPU-")).encode()
        _NVML[uuid] = found if lib.nvmlDeviceGetHandleByUUID(name, ctypes.byref(found)) == SUCCESS else None
    return _NVML[uuid]
