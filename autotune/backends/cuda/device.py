"""Which GPU is there: a driver probe (no device -> a clear error) and the facts we record.

The probe asks the driver (cuInit, cuDeviceGetCount), not the Python import: cuda-python
imports fine on a machine with no GPU and fails only when the driver is called.
"""
from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from functools import lru_cache

from autotune.backends.cuda import nvml
from autotune.errors import NoDeviceError
from autotune.space import Limits

FP32_LANES_PER_SM = 128  # Hopper, Ampere GA10x, Ada: 128 FP32 FMA lanes per SM
# What works without a GPU: the emulator only at small shapes (backends.sim.backend.MAX_WORK), a replay at any
NO_GPU = ("no CUDA device found: run on a machine with an NVIDIA GPU and driver, or use --backend sim with M*N*K "
          "at most 2**27 (about --M 512), or --backend replay --replay-db FILE (a recorded results database)")


def device_count() -> int:
    """Number of CUDA devices the driver reports; 0 when there is no driver or no GPU."""
    try:
        from cuda.bindings import driver

        (err,) = driver.cuInit(0)
        if err != driver.CUresult.CUDA_SUCCESS:
            return 0
        err, count = driver.cuDeviceGetCount()
        return count if err == driver.CUresult.CUDA_SUCCESS else 0
    except Exception:  # libcuda.so missing, driver too old, ...
        return 0


def no_device_reason() -> str | None:
    """None if a GPU answers, else the one-line reason (used by the gpu test marker too)."""
    return None if device_count() > 0 else "no CUDA device found (the driver reported none)"


@dataclass(frozen=True)
class DeviceInfo:
    index: int
    name: str
    uuid: str
    arch: str  # e.g. "sm_90": what NVRTC compiles for
    sm_count: int
    max_clock_mhz: int
    driver_version: str
    limits: Limits

    @property
    def peak_tflops(self) -> float:
        """FP32 FMA peak at the maximum boost clock (2 FLOP per lane per clock)."""
        return self.sm_count * FP32_LANES_PER_SM * 2 * self.max_clock_mhz * 1e6 / 1e12


@lru_cache(maxsize=None)
def device_info(index: int = 0) -> DeviceInfo:
    count = device_count()
    if count == 0:
        raise NoDeviceError(NO_GPU)
    if not 0 <= index < count:
        raise NoDeviceError(f"--device {index} does not exist: this machine has {count} CUDA device(s), 0..{count - 1}")
    from cuda.bindings import driver
    from cuda.core import Device

    dev = Device(index)
    props = dev.properties
    _, version = driver.cuDriverGetVersion()
    limits = Limits(
        max_threads_per_block=props.max_threads_per_block,
        max_static_shared=min(48 * 1024, props.max_shared_memory_per_block),
        max_shared_optin=props.max_shared_memory_per_block_optin,
        sms=props.multiprocessor_count,
        max_threads_per_sm=props.max_threads_per_multiprocessor,
        max_blocks_per_sm=props.max_blocks_per_multiprocessor,
        shared_per_sm=props.max_shared_memory_per_multiprocessor,
        reserved_shared_per_block=props.reserved_shared_memory_per_block,
        regs_per_sm=props.max_registers_per_multiprocessor,
        arch=f"sm_{dev.arch}",
    )
    return DeviceInfo(
        index=index,
        name=dev.name,
        uuid=str(dev.uuid),
        arch=limits.arch,
        sm_count=props.multiprocessor_count,
        max_clock_mhz=props.clock_rate // 1000 or _smi_int("clocks.max.sm", str(dev.uuid)) or 0,  # kHz
        driver_version=f"{version // 1000}.{version % 1000 // 10}",
        limits=limits,
    )


def sm_clock_mhz(uuid: str) -> int | None:
    """The SM clock right now (read just after timing, while the GPU is still busy-hot).
    NVML in-process (microseconds); nvidia-smi (tens of milliseconds a call) where NVML fails."""
    clock = _nvml_sm_clock(uuid)
    return clock if clock is not None else _smi_int("clocks.sm", uuid)


NVML_CLOCK_SM = 1


def _nvml_sm_clock(uuid: str) -> int | None:
    import ctypes

    lib, device = nvml.library(), nvml.handle(uuid)
    clock = ctypes.c_uint()
    if lib is None or device is None or lib.nvmlDeviceGetClockInfo(device, NVML_CLOCK_SM, ctypes.byref(clock)) != 0:
        return None
    return int(clock.value)


def _smi_int(field: str, uuid: str) -> int | None:
    """One integer field of nvidia-smi for the GPU with this UUID; None if unavailable."""
    if not shutil.which("nvidia-smi"):
        return None
    query = ["nvidia-smi", f"--query-gpu=uuid,{field}", "--format=csv,noheader,nounits"]
    try:
        out = subprocess.run(query, capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    for line in out.splitlines():
        gpu, _, clock = line.partition(",")
        if gpu.strip().removeprefix("GPU-") == uuid.removeprefix("GPU-") and clock.strip().isdigit():
            return int(clock)
    return None
