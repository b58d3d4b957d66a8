"""Device memory for the GPU backend: copies between host and device, and NaN-poisoned outputs."""
from __future__ import annotations

import numpy as np

NAN_BITS = 0x7FC00000  # a quiet NaN: outputs never written stay NaN and fail the check


def driver_result(result: tuple) -> tuple:
    """A cuda.bindings driver call's results after its status; a failed call raises."""
    from cuda.bindings import driver

    err = result[0]
    if err != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"CUDA driver call failed: {err}")
    return result[1:]


def upload(dev, stream, host: np.ndarray, dtype=np.float32):
    """A new device buffer holding `host` as `dtype` (float32: the kernels' operands)."""
    host = np.ascontiguousarray(host, dtype=dtype)
    buf = dev.allocate(max(host.nbytes, 4), stream=stream)
    upload_into(stream, buf, host, dtype)
    return buf


def upload_into(stream, buf, host: np.ndarray, dtype=np.float32) -> None:
    from cuda.bindings import driver

    host = np.ascontiguousarray(host, dtype=dtype)
    driver_result(driver.cuMemcpyHtoDAsync(int(buf.handle), host.ctypes.data, host.nbytes, stream.handle))
    stream.sync()


def poison(stream, buf, M: int, N: int) -> None:
    """Fill an M x N output with NaN: outputs a kernel never writes stay NaN."""
    from cuda.bindings import driver

    driver_result(driver.cuMemsetD32Async(int(buf.handle), NAN_BITS, M * N, stream.handle))


def poisoned(dev, stream, M: int, N: int):
    """A new M x N output buffer full of NaN."""
    buf = dev.allocate(M * N * 4, stream=stream)
    poison(stream, buf, M, N)
    return buf


def download(stream, buf, M: int, N: int, dtype=np.float32) -> np.ndarray:
    from cuda.bindings import driver

    out = np.empty((M, N), dtype=dtype)
    stream.sync()
    driver_result(driver.cuMemcpyDtoHAsync(out.ctypes.data, int(buf.handle), out.nbytes, stream.handle))
    stream.sync()
    return out
