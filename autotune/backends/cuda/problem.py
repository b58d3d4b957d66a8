"""One problem of the GPU backend: an input set's operands at one shape on the device, the output
buffer kernels write, cuBLAS's product (the FP32 reference) and |A| . |B| (the elementwise bound's
scale), both also on the host to restore the device copies from, and the float64 product where the
fp32-tc contract needs it. The backend keeps one at the search shape (uniform inputs), one at the
odd check shape, and under fp32-tc one more at the search shape on the wide inputs
(reference.input_sets)."""
from __future__ import annotations

from typing import Any

import numpy as np

from autotune.backends.cuda.buffers import download, poison, upload, upload_into
from autotune.backends.cuda.cublas import Cublas
from autotune.backends.cuda.exact import Exact
from autotune.backends.reference import INPUT_SETS, UNIFORM, stored, transposes
from autotune.space import Config


def problem_bytes(M: int, N: int, K: int) -> int:
    """Device memory one problem holds: A, B, C, the reference and |A| . |B|, float32 each."""
    return 4 * (M * K + K * N + 3 * M * N)


class Problem:
    """Device buffers and the cuBLAS reference for one shape and input set: on the device (ref_dev,
    what outputs are compared against) and on the host (ref, to restore ref_dev from). ref_sums:
    what the comparison sums of ref_dev while it is intact (set by the backend)."""

    def __init__(self, dev, stream, blas: Cublas, M: int, N: int, K: int, seed: int, inputs: str = UNIFORM):
        self.M, self.N, self.K, self.stream, self.dev = M, N, K, stream, dev
        self.inputs = inputs  # the input set (reference.INPUT_SETS), which an fp32-tc verdict names
        A, B = INPUT_SETS[inputs](M, N, K, seed)
        self.a, self.b = upload(dev, stream, A), upload(dev, stream, B)
        self.host = (A, B)
        self._stored: dict[tuple[bool, bool], tuple[Any, Any]] = {(False, False): (self.a, self.b)}
        self.c = dev.allocate(M * N * 4, stream=stream)
        self.ref_dev = dev.allocate(M * N * 4, stream=stream)
        blas.sgemm(int(self.a.handle), int(self.b.handle), int(self.ref_dev.handle), M, N, K)
        self.scale_dev = dev.allocate(M * N * 4, stream=stream)  # |A| . |B|: the elementwise bound's scale
        absolute = upload(dev, stream, np.abs(A)), upload(dev, stream, np.abs(B))
        blas.sgemm(int(absolute[0].handle), int(absolute[1].handle), int(self.scale_dev.handle), M, N, K)
        self.ref = download(stream, self.ref_dev, M, N)  # synchronizes: |A| and |B| may go
        self.scale = download(stream, self.scale_dev, M, N)
        self.ref_sums: tuple[float, float] | None = None
        self.scale_sum: float | None = None  # the elementwise check's sum of scale_dev, intact (set by the backend)
        self.exact: Exact | None = None  # the float64 product (fp32-tc), made at the first need

    def operands(self, config: Config) -> tuple[Any, Any]:
        """The device A and B a kernel of this layout reads (TA, TB: transposed copies, uploaded
        once); the reference, cuBLAS's A * B, is every layout's."""
        key = transposes(config.values)
        if key not in self._stored:
            A, B = stored(*self.host, config.values)
            self._stored[key] = (upload(self.dev, self.stream, A) if key[0] else self.a,
                                 upload(self.dev, self.stream, B) if key[1] else self.b)
        return self._stored[key]

    def restore_reference(self) -> None:
        upload_into(self.stream, self.ref_dev, self.ref)

    def restore_scale(self) -> None:
        upload_into(self.stream, self.scale_dev, self.scale)

    def poison(self) -> None:
        poison(self.stream, self.c, self.M, self.N)

    def download(self) -> np.ndarray:
        return download(self.stream, self.c, self.M, self.N)
