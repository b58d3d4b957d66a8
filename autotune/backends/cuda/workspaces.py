"""Prologue workspaces (space.Prologue) for the GPU backend and autotune.load()'s matmul: one per
stream, kept for the process and grown on demand.

Launches on one stream run in order, so each call's prologue writes its stream's workspace only
after the previous call's kernel has read it; the lock keeps two threads that share a stream from
interleaving their prologue and kernel. Kept, not taken from the stream-ordered pool per call: the
device's default pool (release threshold 0) gives its memory back at each synchronization, and the
search synchronizes after every timed run, so each run's allocation could map K*N*4 bytes again
inside the timed region. Two cases take one per call instead or key it apart:
- a stream being captured into a CUDA graph (torch.cuda.graph, torch.compile's reduce-overhead):
  the graph gets an allocation of its own, made and freed in the captured order, so no kept
  workspace is baked into a graph and later freed under it;
- the per-thread default stream (handle 2) is a different stream in each thread: kept per thread.
"""
from __future__ import annotations

import contextlib
import threading
from collections import OrderedDict
from typing import Any, Iterator

from autotune.backends.cuda.buffers import NAN_BITS, driver_result

MAX_KEPT = 8  # streams whose workspaces are kept; beyond, the least recently used one is freed
PER_THREAD_STREAM = 2  # CU_STREAM_PER_THREAD


class Workspaces:
    def __init__(self, driver: Any = None) -> None:
        self._driver = driver  # cuda.bindings.driver (imported at first use); tests pass a fake
        self._held: OrderedDict[tuple[int, int], tuple[int, int]] = OrderedDict()  # key -> (pointer, bytes)
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def use(self, stream_handle: int, nbytes: int, poison: bool = False) -> Iterator[int]:
        """The stream's workspace of at least nbytes, for the launches enqueued inside the block.
        poison: filled with NaN first (a verification's launch), so that a prologue which leaves some
        of it unwritten fails, whatever an earlier launch left there. Needs the stream's context
        current (driver calls)."""
        driver = self._load()
        stream = driver.CUstream(stream_handle)
        with self._lock:
            if self._capturing(stream):
                (dptr,) = driver_result(driver.cuMemAllocAsync(nbytes, stream))
                try:
                    yield self._filled(int(dptr), nbytes, stream, poison)
                finally:
                    driver_result(driver.cuMemFreeAsync(dptr, stream))
                return
            yield self._filled(self._kept(stream_handle, stream, nbytes), nbytes, stream, poison)

    def _load(self) -> Any:
        if self._driver is None:
            from cuda.bindings import driver

            self._driver = driver
        return self._driver

    def _capturing(self, stream: Any) -> bool:
        driver = self._driver
        (status,) = driver_result(driver.cuStreamIsCapturing(stream))
        return status == driver.CUstreamCaptureStatus.CU_STREAM_CAPTURE_STATUS_ACTIVE

    def _kept(self, stream_handle: int, stream: Any, nbytes: int) -> int:
        driver = self._driver
        key = (stream_handle, threading.get_ident() if stream_handle == PER_THREAD_STREAM else 0)
        ptr, size = self._held.pop(key, (0, 0))
        if size < nbytes:
            if ptr:
                driver_result(driver.cuMemFreeAsync(driver.CUdeviceptr(ptr), stream))
            (dptr,) = driver_result(driver.cuMemAllocAsync(nbytes, stream))
            ptr, size = int(dptr), nbytes
        self._held[key] = (ptr, size)  # the most recently used last
        if len(self._held) > MAX_KEPT:
            # its stream may be gone: free it once every launch that could read it has finished
            _, (old, _) = self._held.popitem(last=False)
            driver_result(driver.cuCtxSynchronize())
            driver_result(driver.cuMemFree(driver.CUdeviceptr(old)))
        return ptr

    def _filled(self, ptr: int, nbytes: int, stream: Any, poison: bool) -> int:
        if poison:
            driver_result(self._driver.cuMemsetD32Async(self._driver.CUdeviceptr(ptr), NAN_BITS, nbytes // 4, stream))
        return ptr
