"""On a GPU: the ozaki and ozakiwg families' C is the numeric reference's (autotune.families.ozaki_math) bit for bit at
odd shapes (integer products and sums are exact, the scaling and the one rounding to FP32 the same), and
at a larger shape within the fp32-tc contract against a float64 product, beside cuBLAS FP32's error."""
from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")


FAMILIES = {"ozaki": {}, "ozakiwg": {"BN": 128}, "ozakiwg WS=0": {"BN": 128, "WS": 0}, "ozakiwg BN=256": {"BN": 256, "WS": 0, "STAGES": 4},
            "ozakiwg BN=256 WS=1": {"BN": 256, "STAGES": 4}, "ozakiwg MINB=2": {"BN": 64, "MINB": 2},
            "ozakiwg MINB=2 WS=0": {"BN": 128, "WS": 0, "STAGES": 3, "MINB": 2}}


def ozaki_product(A, B, params: dict, family: str = "ozaki"):
    """C from the config's prologue into a workspace, then its product, on torch's current stream."""
    from autotune.backends.cuda.launcher import CudaLauncher
    from autotune.codegen.render import render
    from autotune.families import FAMILIES as ALL
    from autotune.space import PROLOGUE_SUFFIX, make_config

    (M, K), N = A.shape, B.shape[1]
    config = make_config(ALL[family.split()[0]], {**FAMILIES[family], **params})
    source, geometry, pre = render(config), config.geometry(M, N), config.prologue(M, N, K)
    assert pre is not None
    launcher = CudaLauncher()
    kernel = launcher.load(0, source, config.name, geometry.shared_bytes)
    pre_kernel = launcher.load(0, source, config.name + PROLOGUE_SUFFIX, 0)
    work = torch.empty(pre.floats, device="cuda")  # torch's allocations start on 256 bytes
    C = torch.full((M, N), float("nan"), device="cuda")
    stream = torch.cuda.current_stream().cuda_stream
    launcher.launch(0, pre_kernel, pre.launch, stream, A.data_ptr(), B.data_ptr(), work.data_ptr(), (M, N, K))
    launcher.launch(0, kernel, geometry, stream, A.data_ptr(), work.data_ptr(), C.data_ptr(), (M, N, K))
    torch.cuda.synchronize()
    return C


@pytest.fixture(autouse=True)
def gpu():
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device answers")


@pytest.mark.parametrize("shape", [(131, 67, 93), (300, 200, 1000), (1, 129, 64)])
@pytest.mark.parametrize("moduli", [6, 8])
@pytest.mark.parametrize("family", FAMILIES)
def test_the_gpus_product_is_the_references_bit_for_bit(shape, moduli, family):
    from autotune.families import ozaki_math

    M, N, K = shape
    torch.manual_seed(M + N + K)
    A, B = torch.randn(M, K, device="cuda"), torch.randn(K, N, device="cuda")
    C = ozaki_product(A, B, {"MODULI": moduli, "SCALE": 0}, family)
    expected = ozaki_math.ozaki_matmul(A.cpu().numpy(), B.cpu().numpy(), moduli)
    assert np.array_equal(C.cpu().numpy(), expected)


@pytest.mark.parametrize("shape", [(131, 67, 93), (300, 200, 1000), (1, 129, 64)])
@pytest.mark.parametrize("family", ["ozaki", "ozakiwg"])
def test_scaling_by_the_norm_is_the_references_bit_for_bit(shape, family):
    """SCALE=1 (ozaki_math.norm_shifts): the prologue's integer sums of squares and shifts as the reference's."""
    from autotune.families import ozaki_math

    M, N, K = shape
    torch.manual_seed(M + N + K + 1)
    A, B = torch.randn(M, K, device="cuda"), torch.randn(K, N, device="cuda")
    C = ozaki_product(A, B, {"MODULI": 7, "SCALE": 1}, family)
    expected = ozaki_math.ozaki_matmul(A.cpu().numpy(), B.cpu().numpy(), 7, ozaki_math.SCALE_NORM)
    assert np.array_equal(C.cpu().numpy(), expected)


@pytest.mark.parametrize("family", ["ozaki", "ozakiwg"])
def test_eight_moduli_are_at_least_as_accurate_as_cublas_fp32(family):
    torch.backends.cuda.matmul.allow_tf32 = False
    M = N = K = 2048
    torch.manual_seed(0)
    A, B = torch.randn(M, K, device="cuda"), torch.randn(K, N, device="cuda")
    ref = A.double() @ B.double()
    ours = float(torch.linalg.norm(ozaki_product(A, B, {"MODULI": 8, "SCALE": 0}, family).double() - ref)
                  / torch.linalg.norm(ref))
    cublas = float(torch.linalg.norm((A @ B).double() - ref) / torch.linalg.norm(ref))
    assert ours <= cublas, (ours, cublas)
