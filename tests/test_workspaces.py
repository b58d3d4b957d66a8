"""The prologue workspaces of the GPU backend and of autotune.load()'s matmul (backends.cuda.launch
.Workspaces), against a fake driver that records its calls: one workspace per stream, kept across
calls and grown on demand (the old one freed in the stream's order), NaN-filled for a verification."""
from types import SimpleNamespace

import pytest

pytest.importorskip("cuda.bindings")
from cuda.bindings import driver as real  # noqa: E402  (its CUresult only: nothing reaches a GPU)

from autotune.backends.cuda.buffers import NAN_BITS  # noqa: E402
from autotune.backends.cuda.launch import Workspaces  # noqa: E402


class FakeDriver:
    CUresult = real.CUresult

    def __init__(self) -> None:
        self.calls: list[tuple] = []
        self.next_ptr = 0x10000

    @staticmethod
    def CUstream(handle: int) -> SimpleNamespace:  # noqa: N802  (the driver's own spelling)
        return SimpleNamespace(handle=handle)

    @staticmethod
    def CUdeviceptr(ptr: int) -> int:  # noqa: N802
        return ptr

    def cuMemAllocAsync(self, nbytes: int, stream) -> tuple:  # noqa: N802
        ptr, self.next_ptr = self.next_ptr, self.next_ptr + 0x10000000
        self.calls.append(("alloc", nbytes, stream.handle, ptr))
        return real.CUresult.CUDA_SUCCESS, ptr

    def cuMemFreeAsync(self, ptr: int, stream) -> tuple:  # noqa: N802
        self.calls.append(("free", ptr, stream.handle))
        return (real.CUresult.CUDA_SUCCESS,)

    def cuMemsetD32Async(self, ptr: int, value: int, count: int, stream) -> tuple:  # noqa: N802
        self.calls.append(("memset", ptr, value, count, stream.handle))
        return (real.CUresult.CUDA_SUCCESS,)


def take(workspaces: Workspaces, stream: int, nbytes: int, poison: bool = False) -> int:
    with workspaces.use(stream, nbytes, poison) as ptr:
        return ptr


def test_a_stream_keeps_its_workspace_and_grows_it_in_its_own_order():
    driver = FakeDriver()
    workspaces = Workspaces(driver)
    first = take(workspaces, 7, 4096)
    assert take(workspaces, 7, 1024) == first and take(workspaces, 7, 4096) == first  # kept: one allocation
    assert driver.calls == [("alloc", 4096, 7, first)]
    grown = take(workspaces, 7, 8192)
    assert grown != first and driver.calls[1:] == [("free", first, 7), ("alloc", 8192, 7, grown)]
    assert take(workspaces, 7, 8192) == grown and len(driver.calls) == 3


def test_each_stream_has_its_own_workspace():
    workspaces = Workspaces(FakeDriver())
    assert take(workspaces, 1, 256) != take(workspaces, 2, 256)
    assert take(workspaces, 1, 256) == take(workspaces, 1, 128)


def test_a_verifications_workspace_is_nan_filled_first():
    driver = FakeDriver()
    workspaces = Workspaces(driver)
    ptr = take(workspaces, 3, 4000)
    assert not [c for c in driver.calls if c[0] == "memset"]  # timed launches: no fill
    take(workspaces, 3, 400, poison=True)
    assert driver.calls[-1] == ("memset", ptr, NAN_BITS, 100, 3)  # the part the launch uses, in its stream's order
