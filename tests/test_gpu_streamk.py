"""On a GPU: the stream-K family's fitted default at three few-tile, long-K shapes gives the same bytes
on every run (its cut tiles are summed in k order by whichever block arrives last), every element
written, within the FP32 contract of a float64 product."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")


@pytest.mark.parametrize("shape", [(1536, 1536, 1536), (1024, 1024, 16384), (520, 700, 9000)])
def test_streamk_gives_the_same_bytes_every_run(shape):
    from autotune.backends.cuda.device import device_info
    from autotune.backends.cuda.launcher import CudaLauncher
    from autotune.codegen.render import render
    from autotune.families import FAMILIES
    from autotune.space import fitted, make_config

    M, N, K = shape
    limits = device_info(0).limits
    config = fitted(make_config(FAMILIES["streamk"], {}), shape, limits)
    geometry = config.geometry(M, N, limits)
    launcher = CudaLauncher()
    kernel = launcher.load(0, render(config), config.name, geometry.shared_bytes)
    torch.manual_seed(M + N + K)
    A, B = torch.randn(M, K, device="cuda"), torch.randn(K, N, device="cuda")
    stream = torch.cuda.current_stream().cuda_stream
    outs = []
    for _ in range(4):
        C = torch.full((M, N), float("nan"), device="cuda")
        launcher.launch(0, kernel, geometry, stream, A.data_ptr(), B.data_ptr(), C.data_ptr(), shape)
        torch.cuda.synchronize()
        outs.append(C)
    ref = A.double() @ B.double()
    assert not torch.isnan(outs[0]).any()
    assert float(torch.linalg.norm(outs[0].double() - ref) / torch.linalg.norm(ref)) < 1e-5
    assert all(torch.equal(outs[0], o) for o in outs[1:])
