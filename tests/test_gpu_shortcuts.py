"""On a GPU: a repeated torch call that our kernel computes goes the short way (api.shortcuts, a prepared
cuLaunchKernel) and gives exactly the full path's product, on torch's current stream, including a side
stream; calls of another kind (strided, float64) still take the full path."""
from __future__ import annotations

import warnings

import pytest

import autotune

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def mm():
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device answers")
    return autotune.load(defaults_only=True)  # our kernels at every shape


@pytest.mark.parametrize("tb", [False, True])
def test_the_short_way_gives_the_full_paths_product(mm, tb):
    torch.manual_seed(0)
    M, N, K = 200, 136, 72
    A = torch.randn(M, K, device="cuda")
    B = torch.randn(N, K, device="cuda") if tb else torch.randn(K, N, device="cuda")
    full = torch.empty(M, N, device="cuda")
    mm(A, B, out=full, trans_b=tb)  # out= never goes the short way
    first = mm(A, B, trans_b=tb)
    key = (A.shape, B.shape, False, tb, A.get_device())
    assert key in mm._fast
    again = mm(A, B, trans_b=tb)
    assert torch.equal(first, full) and torch.equal(again, full)
    ref = A.double() @ (B.double().mT if tb else B.double())
    assert float((again.double() - ref).abs().max()) < 1e-3


def test_the_short_way_runs_on_the_current_stream(mm):
    A, B = torch.randn(300, 64, device="cuda"), torch.randn(64, 90, device="cuda")
    mm(A, B)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        outs = [mm(A, B) for _ in range(20)]
    side.synchronize()
    ref = A @ B
    assert all(torch.allclose(o, ref, rtol=1e-5, atol=1e-4) for o in outs)


def test_other_kinds_of_call_take_the_full_path(mm):
    A, B = torch.randn(64, 48, device="cuda"), torch.randn(48, 40, device="cuda")
    mm(A, B)
    strided = torch.randn(64, 100, device="cuda")[:, :48]  # the same shape, rows of a wider matrix
    assert torch.allclose(mm(strided, B), strided @ B, rtol=1e-5, atol=1e-4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # float64 goes to torch unchanged, said once a process
        assert torch.allclose(mm(A.double(), B.double()), A.double() @ B.double())


def test_with_aten_steps_calls_give_the_same_products_on_the_device(monkeypatch, tmp_path):
    """api._aten built for the device's torch (as a first use does, here waited for) and taken: a planned
    pass-through and a planned kernel call, and on a side stream, give exactly what they give without it."""
    from autotune.api import aten_build, fastcall

    if not torch.cuda.is_available():
        pytest.skip("no CUDA device answers")
    if fastcall.NATIVE is None:
        pytest.skip("the C extension was not built here (no compiler or headers)")
    monkeypatch.delenv("AUTOTUNE_ATEN")
    taken = []
    aten_build.when_built(torch, taken.append, wait=True)
    assert taken, (aten_build.folder(torch) / "failed.txt").read_text()
    from autotune import store

    store.open_db(tmp_path / "empty.sqlite")  # no row: cuBLAS at every shape
    ours, library = autotune.load(defaults_only=True), autotune.load(str(tmp_path / "empty.sqlite"))
    A, B = torch.randn(144, 4, device="cuda"), torch.randn(4, 1013, device="cuda")
    W = torch.randn(96, 200, device="cuda")  # x·Wᵀ, as nn.Linear calls it
    x = torch.randn(300, 200, device="cuda")
    calls = [(library, A, B, False), (ours, A, B, False), (ours, x, W, True), (library, x, W, True)]
    before = fastcall.NATIVE.use_aten(None)
    try:
        want = [mm(a, b, trans_b=tb) for mm, a, b, tb in calls for _ in range(2)]
        fastcall.NATIVE.use_aten(taken[0])
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            got = [mm(a, b, trans_b=tb) for mm, a, b, tb in calls for _ in range(2)]
        side.synchronize()
    finally:
        fastcall.NATIVE.use_aten(before)
    assert all(torch.equal(g, w) for g, w in zip(got, want))
    assert "cuBLAS" in library.choose(144, 1013, 4).describe() and "cuBLAS" not in ours.choose(144, 1013, 4).describe()


@pytest.mark.parametrize(("shape", "trans_a", "trans_b"), [((1, 3434, 234), False, True), ((1, 777, 101), False, True),
                                                           ((5001, 1, 201), True, False)])
def test_one_row_or_column_computed_with_its_operands_swapped_is_the_product(mm, shape, trans_a, trans_b):
    # x·Wᵀ of one row as W·x, Aᵀ·b of one column as b·A (api.operands.swapped_shape), where the shipped database's
    # rows cover those products: the full path, the short way and out= all give torch's product
    shipped = autotune.load()
    M, N, K = shape
    choice = shipped.choose(M, N, K, trans_a=trans_a, trans_b=trans_b)
    if choice.library:
        pytest.skip(f"no shipped row covers {choice.swapped or shape} on {torch.cuda.get_device_name()}")
    assert choice.swapped == ((N, 1, K) if trans_b else (1, M, K))
    torch.manual_seed(1)
    A = torch.randn(K, M, device="cuda") if trans_a else torch.randn(M, K, device="cuda")
    B = torch.randn(N, K, device="cuda") if trans_b else torch.randn(K, N, device="cuda")
    out = torch.full((M, N), float("nan"), device="cuda")
    shipped(A, B, out=out, trans_a=trans_a, trans_b=trans_b)
    first = shipped(A, B, trans_a=trans_a, trans_b=trans_b)
    assert (A.shape, B.shape, trans_a, trans_b, A.get_device()) in shipped._fast
    again = shipped(A, B, trans_a=trans_a, trans_b=trans_b)
    ref = (A.double().mT if trans_a else A.double()) @ (B.double().mT if trans_b else B.double())
    assert first.shape == again.shape == (M, N) and torch.equal(first, out) and torch.equal(again, out)
    assert float((again.double() - ref).abs().max()) < 1e-3 * float(ref.abs().max())
