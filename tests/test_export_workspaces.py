"""The exported launchers of a kernel with a prologue keep its workspace per stream instead of
allocating one per call (a 4096^3 3xTF32 call allocated and freed 268 MB each time, which the
stream-ordered pool unmapped at every synchronization). best.py runs against a fake cuda.bindings
driver that records its calls: a second call at the same or a smaller shape allocates nothing, a
larger one grows the workspace in the stream's order, each stream (and context, and thread of the
per-thread default stream) has its own, a capturing stream's is the graph's own, beyond MAX_KEPT
streams the least recently used is freed after a synchronization, and release_workspaces (run at
exit) frees them all. best.h: the same, compiled with g++ against the CUDA stub, and with nvcc
against the real runtime headers."""
from __future__ import annotations

import atexit
import shutil
import subprocess
import sys
import threading
import types
from pathlib import Path
from types import SimpleNamespace

import pytest

from autotune.codegen.launcher import launchers
from autotune.codegen.render import render
from autotune.families import FAMILIES
from autotune.space import PROLOGUE_SUFFIX, make_config
from tests.fakes import DriverTypes
from tests.test_launchers import DATA, LAUNCH, load_module

PB = make_config(FAMILIES["blocked"], {"TB": 1, "PB": 1})  # B transposed by a prologue into K*N floats
SHAPE = (96, 80, 40)
ACTIVE = "active"


class FakeDriver(DriverTypes):
    """What best.py asks of cuda.bindings.driver, recorded; every call succeeds (status 0)."""

    CUstreamCaptureStatus = SimpleNamespace(CU_STREAM_CAPTURE_STATUS_NONE="none", CU_STREAM_CAPTURE_STATUS_ACTIVE=ACTIVE)

    def __init__(self) -> None:
        self.calls: list[tuple] = []
        self.context = 0xC1
        self.capturing: set[int] = set()
        self.next_ptr = 0x100000


    @staticmethod
    def CUcontext(context: int) -> int:  # noqa: N802
        return context

    def cuInit(self, flags: int) -> tuple:  # noqa: N802
        return (0,)

    def cuCtxGetCurrent(self) -> tuple:  # noqa: N802
        return 0, self.context

    def cuCtxPushCurrent(self, context: int) -> tuple:  # noqa: N802
        self.calls.append(("push", context))
        return (0,)

    def cuCtxPopCurrent(self) -> tuple:  # noqa: N802
        self.calls.append(("pop",))
        return 0, self.context

    def cuCtxSynchronize(self) -> tuple:  # noqa: N802
        self.calls.append(("sync",))
        return (0,)

    def cuStreamIsCapturing(self, stream) -> tuple:  # noqa: N802
        return 0, ACTIVE if stream.handle in self.capturing else "none"

    def cuMemAllocAsync(self, nbytes: int, stream) -> tuple:  # noqa: N802
        ptr, self.next_ptr = self.next_ptr, self.next_ptr + 0x10000000
        self.calls.append(("alloc", nbytes, stream.handle, ptr))
        return 0, ptr

    def cuMemFreeAsync(self, ptr: int, stream) -> tuple:  # noqa: N802
        self.calls.append(("free", int(ptr), stream.handle))
        return (0,)

    def cuMemFree(self, ptr: int) -> tuple:  # noqa: N802
        self.calls.append(("free now", int(ptr)))
        return (0,)

    def cuLaunchKernel(self, function, gx, gy, gz, bx, by, bz, shared, stream, args, extra) -> tuple:  # noqa: N802
        self.calls.append(("launch", function, stream.handle, args[0][:3]))
        return (0,)


@pytest.fixture
def fake(monkeypatch) -> FakeDriver:
    """The fake as cuda.bindings.driver for `from cuda.bindings import driver` (installed or not)."""
    driver = FakeDriver()
    bindings = types.ModuleType("cuda.bindings")
    bindings.driver = driver  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "cuda", types.ModuleType("cuda"))
    monkeypatch.setitem(sys.modules, "cuda.bindings", bindings)
    monkeypatch.setitem(sys.modules, "cuda.bindings.driver", driver)
    return driver


@pytest.fixture
def best(tmp_path, monkeypatch, fake):
    """best.py of the PB=1 kernel, its kernels already 'loaded' in the fake's contexts."""
    registered: list = []
    monkeypatch.setattr(atexit, "register", lambda f, *a, **k: registered.append(f) or f)
    made = launchers(PB, PB.name, PB.geometry(*SHAPE[:2]), SHAPE, None, tmp_path / "best.cu")
    (tmp_path / "best.py").write_text(made.python)
    module = load_module(tmp_path / "best.py")
    module.registered_at_exit = registered
    for context in (0xC1, 0xC2):
        for name in (PB.name, PB.name + PROLOGUE_SUFFIX):
            module._functions[(context, name)] = f"{name}@{context:#x}"
    return module


def allocs(fake: FakeDriver) -> list[tuple]:
    return [c for c in fake.calls if c[0] in ("alloc", "free", "free now")]


def call(best, M: int = 96, N: int = 80, K: int = 40, stream: int | None = 7) -> int:
    """One launch; the workspace the kernel was passed as its B."""
    best.launch(0xA000, 0xB000, 0xC000, M, N, K, stream=stream)
    return best_workspace(best)


def best_workspace(best) -> int:
    pre, own = [c for c in sys.modules["cuda.bindings"].driver.calls if c[0] == "launch"][-2:]
    assert pre[1].split("@")[0] == PB.name + PROLOGUE_SUFFIX and pre[3][:2] == (0xA000, 0xB000)
    assert own[3] == (0xA000, pre[3][2], 0xC000)  # the kernel reads what its prologue wrote
    return pre[3][2]


def test_a_second_call_at_the_same_or_a_smaller_shape_allocates_nothing(best, fake):
    first = call(best)
    assert allocs(fake) == [("alloc", 4 * 80 * 40, 7, first)]
    assert call(best) == first and call(best, N=40, K=40) == first and call(best, 3, 80, 40) == first
    assert len(allocs(fake)) == 1


def test_a_larger_call_grows_the_workspace_in_the_streams_order(best, fake):
    first = call(best)
    grown = call(best, N=160)
    assert grown != first and allocs(fake)[1:] == [("free", first, 7), ("alloc", 4 * 160 * 40, 7, grown)]
    assert call(best) == grown and call(best, N=160) == grown and len(allocs(fake)) == 3


def test_each_stream_context_and_per_thread_stream_has_its_own(best, fake):
    on_7, on_8, legacy = call(best, stream=7), call(best, stream=8), call(best, stream=None)
    assert len({on_7, on_8, legacy}) == 3 and call(best, stream=0) == legacy
    fake.context = 0xC2  # the same handle in another context (device) is another stream
    assert call(best, stream=7) not in (on_7, on_8, legacy)
    fake.context = 0xC1
    here = call(best, stream=2)  # CU_STREAM_PER_THREAD: a different stream in each thread
    there: list[int] = []
    thread = threading.Thread(target=lambda: there.append(call(best, stream=2)))
    thread.start()
    thread.join()
    assert there[0] != here and call(best, stream=2) == here and call(best, stream=7) == on_7


def test_a_capturing_streams_workspace_is_the_graphs_own(best, fake):
    kept = call(best)
    fake.capturing.add(7)
    captured = call(best)
    assert captured != kept and allocs(fake)[-2:] == [("alloc", 4 * 80 * 40, 7, captured), ("free", captured, 7)]
    fake.capturing.clear()
    assert call(best) == kept


def test_beyond_max_kept_streams_the_least_recently_used_is_freed_after_a_synchronization(best, fake):
    first = call(best, stream=100)
    second = call(best, stream=101)
    for i in range(best.MAX_KEPT - 2):
        call(best, stream=102 + i)
    call(best, stream=100)  # the first used again: the second is now the least recently used
    call(best, stream=200)
    assert [c for c in fake.calls if c[0] in ("sync", "free now")] == [("sync",), ("free now", second)]
    assert call(best, stream=100) == first


def test_release_workspaces_frees_them_all_and_runs_at_exit(best, fake):
    assert best.registered_at_exit  # registered when the module loads
    kept = {call(best, stream=7), call(best, stream=8)}
    fake.context = 0xC2
    kept.add(call(best, stream=7))
    for at_exit in best.registered_at_exit:
        at_exit()
    freed = {c[1] for c in fake.calls if c[0] == "free now"}
    assert freed == kept and fake.calls.count(("sync",)) == 2  # each context synchronized first
    assert ("push", 0xC1) in fake.calls and ("push", 0xC2) in fake.calls
    before = len(allocs(fake))
    call(best, stream=7)
    assert len(allocs(fake)) == before + 1  # allocated again after a release


def test_a_callers_workspace_is_used_as_given(best, fake):
    best.launch(0xA000, 0xB000, 0xC000, *SHAPE, stream=7, workspace=0x7000)
    assert best_workspace(best) == 0x7000 and not allocs(fake)


# ----------------------------------------------------------------- best.h

HEADER_DRIVER = r"""
#include <cstdio>
#include <thread>
#include "best.h"
static int capturing = 0, device = 0;
static char memory[32][1 << 16];
static int next_block = 0;
cudaError_t cudaGetDevice(int* d) { *d = device; return cudaSuccess; }
cudaError_t cudaSetDevice(int d) { std::printf("set device %d\n", d); device = d; return cudaSuccess; }
cudaError_t cudaFuncSetAttribute(const void*, cudaFuncAttribute, int) { return cudaSuccess; }
cudaError_t cudaGetLastError() { return cudaSuccess; }
cudaError_t cudaStreamIsCapturing(cudaStream_t, cudaStreamCaptureStatus* s) {
    *s = capturing ? cudaStreamCaptureStatusActive : cudaStreamCaptureStatusNone; return cudaSuccess; }
cudaError_t cudaMallocAsync(void** p, size_t bytes, cudaStream_t s) {
    *p = memory[next_block++]; std::printf("alloc %zu on %zu: %d\n", bytes, (size_t)s, (int)((char*)*p - memory[0]) >> 16);
    return cudaSuccess; }
cudaError_t cudaFreeAsync(void* p, cudaStream_t s) {
    std::printf("free %d on %zu\n", (int)((char*)p - memory[0]) >> 16, (size_t)s); return cudaSuccess; }
cudaError_t cudaFree(void* p) { std::printf("free now %d\n", (int)((char*)p - memory[0]) >> 16); return cudaSuccess; }
cudaError_t cudaDeviceSynchronize() { std::printf("sync %d\n", device); return cudaSuccess; }
void stub_launch(dim3, dim3, size_t, cudaStream_t) {}
extern "C" void KERNEL_pre(const float*, const float*, float*, int, int, int) {}
extern "C" void KERNEL(const float*, const float* W, float*, int, int, int) {
    std::printf("kernel W=%d\n", (int)((const char*)W - memory[0]) >> 16); }
static cudaStream_t stream(size_t handle) { return (cudaStream_t)handle; }
int main() {
    int M, N, K;
    size_t handle;
    char what[16];
    while (std::scanf("%15s", what) == 1) {
        if (what[0] == 'c') { std::scanf("%d", &capturing); continue; }
        if (what[0] == 'd') { std::scanf("%d", &device); continue; }
        if (what[0] == 'r') { std::printf("release %d\n", (int)KERNEL_release_workspaces()); continue; }
        std::scanf("%d %d %d %zu", &M, &N, &K, &handle);
        auto call = [&] { std::printf("launch %d\n", (int)KERNEL_launch(nullptr, nullptr, nullptr, M, N, K, stream(handle))); };
        if (what[0] == 't') std::thread(call).join();  // from a thread of its own
        else call();
    }
}
"""


def header_run(tmp_path: Path, script: str) -> list[str]:
    """Runs the header's launcher through the script's lines: `launch M N K stream` (`thread M N K
    stream`: from a new thread), `capture 0|1`, `device D`, `release`; the lines it printed."""
    made = launchers(PB, PB.name, PB.geometry(*SHAPE[:2]), SHAPE, None, tmp_path / "best.cu")
    (tmp_path / "best.h").write_text(LAUNCH.sub(r"stub_launch(\2); \1(\3);", made.header))
    (tmp_path / "driver.cpp").write_text(HEADER_DRIVER.replace("KERNEL", PB.name))
    subprocess.run(["g++", "-std=c++17", "-Wall", "-Werror", "-pthread", "-I", str(DATA / "cuda_stub"), "-I",
                    str(tmp_path), "-o", str(tmp_path / "driver"), str(tmp_path / "driver.cpp")],
                   check=True, capture_output=True, text=True)
    return subprocess.run([str(tmp_path / "driver")], input=script, capture_output=True, text=True,
                          check=True).stdout.splitlines()


needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="no g++")


@needs_gxx
def test_the_header_keeps_a_workspace_per_stream_and_grows_it(tmp_path):
    lines = header_run(tmp_path, "launch 96 80 40 7\nlaunch 96 80 40 7\nlaunch 96 40 40 7\nlaunch 96 160 40 7\n"
                                 "launch 96 80 40 7\nlaunch 96 80 40 8\nlaunch 96 80 40 0\n")
    kb = 4 * 80 * 40
    assert lines == [f"alloc {kb} on 7: 0", "kernel W=0", "launch 0", "kernel W=0", "launch 0",  # kept
                     "kernel W=0", "launch 0",  # smaller: kept
                     "free 0 on 7", f"alloc {2 * kb} on 7: 1", "kernel W=1", "launch 0",  # grown in order
                     "kernel W=1", "launch 0",
                     f"alloc {kb} on 8: 2", "kernel W=2", "launch 0", f"alloc {kb} on 0: 3", "kernel W=3", "launch 0"]


@needs_gxx
def test_the_header_keys_devices_apart_and_leaves_a_capture_its_own(tmp_path):
    lines = header_run(tmp_path, "launch 96 80 40 7\ndevice 1\nlaunch 96 80 40 7\ncapture 1\nlaunch 96 80 40 7\n"
                                 "capture 0\nlaunch 96 80 40 7\n")
    kb = 4 * 80 * 40
    assert lines == [f"alloc {kb} on 7: 0", "kernel W=0", "launch 0", f"alloc {kb} on 7: 1", "kernel W=1", "launch 0",
                     f"alloc {kb} on 7: 2", "kernel W=2", "free 2 on 7", "launch 0",  # the graph's own, freed in it
                     "kernel W=1", "launch 0"]


@needs_gxx
def test_the_header_keeps_one_per_thread_for_the_per_thread_default_stream(tmp_path):
    lines = header_run(tmp_path, "launch 96 80 40 2\nthread 96 80 40 2\nlaunch 96 80 40 2\nthread 96 80 40 0\n"
                                 "launch 96 80 40 0\n")
    kb = 4 * 80 * 40
    assert lines == [f"alloc {kb} on 2: 0", "kernel W=0", "launch 0", f"alloc {kb} on 2: 1", "kernel W=1", "launch 0",
                     "kernel W=0", "launch 0",  # this thread's again
                     f"alloc {kb} on 0: 2", "kernel W=2", "launch 0", "kernel W=2", "launch 0"]  # legacy: one for all


@needs_gxx
def test_the_header_frees_the_least_recently_used_beyond_its_slots_and_on_release(tmp_path):
    slots = 8
    script = "".join(f"launch 96 80 40 {100 + i}\n" for i in range(slots)) + "launch 96 80 40 100\nlaunch 96 80 40 200\n"
    lines = header_run(tmp_path, script + "device 1\nlaunch 96 80 40 7\ndevice 0\nrelease\nlaunch 96 80 40 100\n")
    kb = 4 * 80 * 40
    evicted = lines.index("sync 0")
    assert lines[evicted:evicted + 3] == ["sync 0", "free now 1", f"alloc {kb} on 200: 8"]  # 101's, then 200's
    # on device 1 the least recently used is device 0's (102's): freed there, then back on device 1
    assert lines[evicted + 5:evicted + 10] == ["set device 0", "sync 0", "free now 2", "set device 1", f"alloc {kb} on 7: 9"]
    released = lines[evicted + 12:lines.index("release 0")]
    assert sorted(int(line.split()[-1]) for line in released if line.startswith("free now")) == [0, 3, 4, 5, 6, 7, 8, 9]
    assert "\n".join(released).count("set device 1\nsync 1\nfree now 9\nset device 0") == 1  # on its own device
    assert lines[-3:] == [f"alloc {kb} on 100: 10", "kernel W=10", "launch 0"]  # allocated again afterwards


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="no nvcc")
def test_the_header_compiles_against_the_cuda_runtime(tmp_path):
    """nvcc, host and device code for sm_90, no GPU needed: the stub's calls are the real runtime's."""
    made = launchers(PB, PB.name, PB.geometry(*SHAPE[:2]), SHAPE, None, tmp_path / "best.cu")
    (tmp_path / "best.h").write_text(made.header)
    (tmp_path / "best.cu").write_text(render(PB))
    (tmp_path / "app.cu").write_text('#include "best.h"\nint main() {\n'
                                     f"    cudaError_t a = {PB.name}_launch(nullptr, nullptr, nullptr, 96, 80, 40);\n"
                                     f"    return (int)a | (int){PB.name}_release_workspaces();\n}}\n")
    build = subprocess.run(["nvcc", "-std=c++17", "-arch=sm_90", "-Werror", "all-warnings", "-c", "app.cu", "-o",
                            "app.o"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stderr[-3000:]
