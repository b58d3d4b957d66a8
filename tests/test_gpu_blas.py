"""On a GPU: BLAS=1 kernels (leading dimensions, alpha, beta, strided batches) against
cublasSgemmStridedBatched called with the same buffers and arguments, every layout."""
from __future__ import annotations

import pytest

from autotune.backends.reference import TOLERANCE
from autotune.codegen.render import render
from autotune.families import BLOCKED
from autotune.space import Operands, make_config, operand_problems, stored_shapes, violations

pytestmark = pytest.mark.gpu
LAYOUTS = {"NN": (0, 0), "NT": (0, 1), "TN": (1, 0), "TT": (1, 1)}
KERNELS = ({}, {"ASYNC": 1, "STAGES": 3}, {"BM": 64, "BN": 32, "WM": 32, "WN": 16, "TM": 2, "TN": 1, "WNITER": 1})
# (shape, alpha, beta, batch, extra floats per row): odd shapes take the guarded loads; multiples of 4
# with rows 4 longer, the 16-byte loads and cp.async copies, interior tiles without predicates.
CASES = (((257, 129, 67), 1.0, 0.0, 1, 3), ((257, 129, 67), 0.5, 2.0, 3, 1), ((256, 512, 96), 0.5, 2.0, 3, 4),
         ((256, 512, 96), 1.0, 0.0, 2, 0))


@pytest.fixture(scope="module")
def gpu():
    from cuda.core import Device

    from autotune.backends.cuda.cublas import Cublas
    from autotune.backends.cuda.device import device_info

    info = device_info(0)
    dev = Device(info.index)
    dev.set_current()
    stream = dev.create_stream()
    return info, dev, stream, Cublas(int(stream.handle))


def operands(M, N, K, ta, tb, alpha, beta, batch, extra) -> Operands:
    (ra, ca), (rb, cb) = stored_shapes(M, N, K, bool(ta), bool(tb))
    lda, ldb, ldc = ca + extra, cb + extra, N + extra
    return Operands(lda, ldb, ldc, alpha, beta, batch, ra * lda + 4 * extra, rb * ldb + 4 * extra, M * ldc + 4 * extra)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_blas_kernels_match_cublas_with_the_same_operands(gpu, layout, case):
    from autotune.backends.cuda.backend import required_kernel
    from autotune.backends.cuda.strided import StridedProblem

    info, dev, stream, blas = gpu
    (M, N, K), alpha, beta, batch, extra = case
    ta, tb = LAYOUTS[layout]
    ops = operands(M, N, K, ta, tb, alpha, beta, batch, extra)
    assert not operand_problems(M, N, K, bool(ta), bool(tb), ops)
    problem = StridedProblem(dev, stream, blas, M, N, K, bool(ta), bool(tb), ops, seed=5)
    cublas_vs_float64 = problem.errors(problem.cublas)[1]
    assert cublas_vs_float64 <= TOLERANCE  # cuBLAS read the operands as the kernels do
    for params in KERNELS:
        config = make_config(BLOCKED, {**params, "TA": ta, "TB": tb, "BLAS": 1})
        assert not violations(config)
        geo = config.geometry(M, N)
        kernel = required_kernel(render(config), config.name, info.arch, geo.shared_bytes, info.index)
        vs_cublas, vs_float64 = problem.errors(problem.run(kernel, config))
        assert vs_cublas <= TOLERANCE and vs_float64 <= TOLERANCE, (config.name, ops, vs_cublas, vs_float64)


def test_the_backend_measures_a_blas_kernel_on_a_plain_problem():
    """A search may draw BLAS=1 at one batch: the backend calls it with the plain operands."""
    from autotune.backends.cuda.backend import CudaBackend

    config = make_config(BLOCKED, {"BLAS": 1, "TB": 1})
    outcome = CudaBackend(257, 129, 67, seed=7).measure(config, render(config))
    assert outcome.status == "ok", outcome.reason
