"""The short ways of a repeated torch call (api.shortcuts), on the CPU: each returns the product for a
call of the kind it was made for and None (the full path) for any other; the kernel's takes its stream
and device from torch and hands the launch the operands' pointers. A stand-in for torch's CUDA getters
plays the device."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from autotune.api import shortcuts

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("trans_a", [False, True])
@pytest.mark.parametrize("trans_b", [False, True])
def test_to_torch_is_torch_mm_in_fp32_and_nothing_else(trans_a, trans_b):
    A = torch.randn(3, 5) if trans_a else torch.randn(5, 3)
    B = torch.randn(4, 3) if trans_b else torch.randn(3, 4)
    run = shortcuts.to_torch(torch, trans_a, trans_b)
    assert torch.equal(run(A, B), torch.mm(A.mT if trans_a else A, B.mT if trans_b else B))
    assert run(A.double(), B.double()) is None  # another dtype: the full path, which says so
    was = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = True
    try:
        assert run(A, B) is None  # TF32 on: the full path keeps the product FP32
    finally:
        torch.backends.cuda.matmul.allow_tf32 = was


class StandIn:
    """torch with its CUDA getters played: the current device and each device's raw stream."""

    float32 = torch.float32
    is_grad_enabled = staticmethod(torch.is_grad_enabled)

    def __init__(self, current: int):
        self.current = current
        self._C = SimpleNamespace(_cuda_getCurrentRawStream=lambda device: 1000 + device,
                                  _cuda_getDevice=lambda: self.current)


def kernel_run(status: int = 0, current: int = -1):
    launches: list[tuple] = []

    def launch(stream, a, b, c):
        launches.append((stream, a, b, c))
        return status

    # CPU tensors are on "device" -1 (get_device()), which the stand-in makes current
    return shortcuts.to_kernel(StandIn(current), launch, -1, (5, 4)), launches


def test_to_kernel_launches_on_the_current_stream_with_the_operands_pointers():
    run, launches = kernel_run()
    A, B = torch.randn(5, 3), torch.randn(3, 4)
    C = run(A, B)
    assert C.shape == (5, 4) and C.dtype == torch.float32
    assert launches == [(999, A.data_ptr(), B.data_ptr(), C.data_ptr())]


@pytest.mark.parametrize("why", ["float64", "strided", "grad", "b float64"])
def test_to_kernel_leaves_other_calls_to_the_full_path(why):
    run, launches = kernel_run()
    A, B = torch.randn(5, 3), torch.randn(3, 4)
    if why == "float64":
        A = A.double()
    elif why == "b float64":
        B = B.double()
    elif why == "strided":
        A = torch.randn(3, 5).mT
    elif why == "grad":
        A.requires_grad_()
    assert run(A, B) is None and launches == []


def test_to_kernel_and_kernel_eligible_take_an_operand_that_requires_grad_under_no_grad(monkeypatch):
    monkeypatch.setattr(torch.cuda, "current_device", lambda: -1)  # CPU tensors' "device"
    run, launches = kernel_run()
    A, W = torch.randn(5, 3), torch.nn.Parameter(torch.randn(3, 4))  # W: a layer's weight, say
    assert not shortcuts.kernel_eligible(torch, A, W) and run(A, W) is None and launches == []
    with torch.no_grad():
        assert shortcuts.kernel_eligible(torch, A, W)
        C = run(A, W)
    assert not C.requires_grad and launches == [(999, A.data_ptr(), W.data_ptr(), C.data_ptr())]


def test_to_kernel_needs_the_operands_device_current_and_the_launch_enqueued():
    run, launches = kernel_run(current=0)
    assert run(torch.randn(5, 3), torch.randn(3, 4)) is None and launches == []
    run, launches = kernel_run(status=201)  # CUDA_ERROR_INVALID_CONTEXT: not enqueued
    assert run(torch.randn(5, 3), torch.randn(3, 4)) is None and len(launches) == 1


class FullPath(Exception):
    """Raised where a call left the short way (the test's stand-in for the full path)."""


@pytest.mark.parametrize("trans_a", [False, True])
@pytest.mark.parametrize("trans_b", [False, True])
def test_matmul_runs_a_torch_product_inline_as_calling_it_would(trans_a, trans_b, monkeypatch):
    """Matmul.__call__ runs a TorchProduct's product itself (a frame less): the same product, and the same
    refusals (another dtype, TF32 on) that send the call on to the full path."""
    from autotune.api.matmul import Matmul

    mm = Matmul.__new__(Matmul)  # only the table of short ways matters before the full path
    mm._fast = {}
    def full_path(A):  # the full path's first step: which stream A's library runs on
        raise FullPath

    monkeypatch.setattr("autotune.api.matmul.current_stream", full_path)
    A = torch.randn(3, 5) if trans_a else torch.randn(5, 3)
    B = torch.randn(4, 3) if trans_b else torch.randn(3, 4)
    way = shortcuts.to_torch(torch, trans_a, trans_b)
    mm._fast[(A.shape, B.shape, trans_a, trans_b, A.get_device())] = way
    assert torch.equal(mm(A, B, trans_a=trans_a, trans_b=trans_b), way(A, B))
    with pytest.raises(FullPath):
        mm(A.double(), B.double(), trans_a=trans_a, trans_b=trans_b)
    was = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = True
    try:
        with pytest.raises(FullPath):
            mm(A, B, trans_a=trans_a, trans_b=trans_b)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = was
