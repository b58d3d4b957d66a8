"""The fp32-tc contract on the GPU (backends.reference.judge): a float64 product of one problem's
inputs, made on the device by cuBLAS DGEMM, cuBLAS FP32's own error against it, and a kernel
output's error against it, both reduced on the device (compare.SOURCE64).

Made once per problem (shape), at its first tensor-core kernel: a search of FP32 families never
pays for it. Like the FP32 reference, the product lies in device memory where a kernel writing past
its output can overwrite it, so each comparison also checks its sums and restores it from the host
copy when they changed.
"""
from __future__ import annotations

import numpy as np

from autotune.backends.cuda.buffers import download, driver_result, upload, upload_into
from autotune.errors import AutotuneError


def extra_bytes(M: int, N: int, K: int) -> int:
    """Device memory the float64 product needs while it is made: A and B in float64, and C."""
    return 8 * (M * K + K * N + M * N)


def check_free(M: int, N: int, K: int, also: int = 0, what: str = "the float64 reference") -> None:
    """Refuse with one line, before allocating, when the device has no room for the product and
    `also` bytes more (what: the thing refused, as the line names it)."""
    from cuda.bindings import driver

    free, _total = driver_result(driver.cuMemGetInfo())
    need = extra_bytes(M, N, K) + also
    if need > 0.9 * free:
        raise AutotuneError(f"{what} of {M}x{N}x{K} (--precision fp32-tc) needs "
                            f"{need / 2**30:.1f} GiB but {free / 2**30:.1f} GiB are free: use a smaller shape")


class Exact:
    """The float64 product of one problem and cuBLAS FP32's error against it.

    host: the problem's A (M x K) and B (K x N) as float32; sgemm: the device buffer holding cuBLAS
    SGEMM's product of them; compare64: a GpuCompare of compare.SOURCE64."""

    def __init__(self, dev, stream, blas, compare64, host: tuple[np.ndarray, np.ndarray], sgemm,
                 M: int, N: int, K: int):
        check_free(M, N, K)
        self.stream, self.compare, self.n = stream, compare64, M * N
        a64, b64 = upload(dev, stream, host[0], np.float64), upload(dev, stream, host[1], np.float64)
        self.ref = dev.allocate(M * N * 8, stream=stream)
        blas.dgemm(int(a64.handle), int(b64.handle), int(self.ref.handle), M, N, K)
        self.host = download(stream, self.ref, M, N, np.float64)  # synchronises: DGEMM is done with a64, b64
        a64.close(stream)
        b64.close(stream)
        first = compare64.compare(sgemm, self.ref, self.n)
        self.err_ref: float = first.error
        self.sums = first.ref_sums  # bit for bit the same while the product is untouched

    def error_of(self, c) -> float | None:
        """The relative error of the float32 output `c` against the product; None when the product
        was overwritten (by the kernel that wrote `c`: it wrote outside its output), now restored."""
        result = self.compare.compare(c, self.ref, self.n)
        if result.ref_sums != self.sums:
            upload_into(self.stream, self.ref, self.host, np.float64)
            return None
        return result.error
