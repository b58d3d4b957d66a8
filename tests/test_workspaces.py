"""The prologue workspaces of the GPU backend and of autotune.load()'s matmul (backends.cuda
.workspaces), against a fake driver that records its calls: one workspace per stream, kept across
calls and grown on demand (the old one freed in the stream's order), NaN-filled for a verification;
a capturing stream's taken and freed per call; the per-thread default stream's kept per thread; the
least recently used freed beyond MAX_KEPT streams."""
import threading

import pytest

pytest.importorskip("cuda.bindings")
from cuda.bindings import driver as real  # noqa: E402  (its CUresult only: nothing reaches a GPU)

from autotune.backends.cuda.buffers import NAN_BITS  # noqa: E402
from autotune.backends.cuda.workspaces import MAX_KEPT, PER_THREAD_STREAM, Workspaces  # noqa: E402
from tests.fakes import DriverTypes  # noqa: E402


class FakeDriver(DriverTypes):
    CUresult = real.CUresult
    CUstreamCaptureStatus = real.CUstreamCaptureStatus

    def __init__(self) -> None:
        self.calls: list[tuple] = []
        self.next_ptr = 0x10000
        self.capturing: set[int] = set()

    def cuStreamIsCapturing(self, stream) -> tuple:  # noqa: N802
        status = self.CUstreamCaptureStatus
        active = stream.handle in self.capturing
        return real.CUresult.CUDA_SUCCESS, (status.CU_STREAM_CAPTURE_STATUS_ACTIVE if active else
                                            status.CU_STREAM_CAPTURE_STATUS_NONE)

    def cuCtxSynchronize(self) -> tuple:  # noqa: N802
        self.calls.append(("sync",))
        return (real.CUresult.CUDA_SUCCESS,)

    def cuMemFree(self, ptr: int) -> tuple:  # noqa: N802
        self.calls.append(("free now", ptr))
        return (real.CUresult.CUDA_SUCCESS,)


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


def test_a_capturing_streams_workspace_is_the_graphs_own():
    driver = FakeDriver()
    workspaces = Workspaces(driver)
    kept = take(workspaces, 5, 1024)
    driver.capturing.add(5)
    captured = take(workspaces, 5, 1024)
    assert captured != kept and driver.calls[-2:] == [("alloc", 1024, 5, captured), ("free", captured, 5)]
    driver.capturing.clear()
    assert take(workspaces, 5, 1024) == kept  # the kept one, untouched by the capture


def test_the_per_thread_default_stream_keeps_one_workspace_per_thread():
    workspaces = Workspaces(FakeDriver())
    here = take(workspaces, PER_THREAD_STREAM, 256)
    there: list[int] = []
    thread = threading.Thread(target=lambda: there.append(take(workspaces, PER_THREAD_STREAM, 256)))
    thread.start()
    thread.join()
    assert there[0] != here and take(workspaces, PER_THREAD_STREAM, 256) == here
    assert take(workspaces, 0, 256) == take(workspaces, 0, 256)  # the legacy stream: one for every thread


def test_beyond_max_kept_streams_the_least_recently_used_is_freed_after_a_synchronization():
    driver = FakeDriver()
    workspaces = Workspaces(driver)
    first = take(workspaces, 100, 64)
    ptrs = [take(workspaces, 101 + i, 64) for i in range(MAX_KEPT - 1)]
    take(workspaces, 100, 64)  # the first used again: the second is now the least recently used
    take(workspaces, 200, 64)
    assert driver.calls[-2:] == [("sync",), ("free now", ptrs[0])]
    assert take(workspaces, 100, 64) == first
