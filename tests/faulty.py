"""Broken variants that live only in the tests: a family "faulty" whose rendered source is
edited to fault in one chosen way, and a backend wrapper that breaks its worker process.

Source faults (the kernel itself misbehaves; the same on the emulator and the GPU):
  oob         writes one row past the end of C (the emulator's AddressSanitizer reports it)
  illegal     writes 4 TiB past C: an illegal address on the GPU, a SEGV on the emulator
  misaligned  reads A through a float4 pointer that is 4-byte aligned: a GPU fault
  hang        spins forever on volatile reads of global memory (no compiler may remove them)
  wrong       adds 1 to every output
  compile     is not CUDA
Worker faults (the process misbehaves; see FaultyBackend):
  die         the worker exits abruptly (as a segfaulting driver would take it down)
  stall       the worker stops answering after it compiled (the watchdog must act)
  devfault    the backend raises DeviceFault (a poisoned context)
  envfault    the backend raises EnvironmentFault (the machine, not the kernel: the search must stop)
  slow        a healthy kernel that takes a second before its first beat (time to lose the parent)
  none        a healthy kernel: the search must still measure it after all of the above

Use: monkeypatch autotune.search.plan.render with faulty_render (the parent renders), and
build the worker with WorkerSpec("tests.faulty:faulty_sim", ...) or kind "cuda".
"""
from __future__ import annotations

import os
import signal
import time

from autotune.backends.cuda.backend import DeviceFault
from autotune.codegen.render import render
from autotune.errors import EnvironmentFault
from autotune.families import NAIVE
from autotune.families.common import THREADS
from autotune.space import Config, Family, Limits, Param

SOURCE_FAULTS = ("oob", "illegal", "misaligned", "hang", "wrong", "compile")
WORKER_FAULTS = ("die", "stall", "devfault", "envfault", "slow")
STORE = "C[row * N + col] = acc;"
LOAD = "acc += A[row * K + k] * B[k * N + col];"
BODY = "    float acc = 0.0f;\n"
EDITS = {
    "oob": (STORE, "C[M * N + row * N + col] = acc;"),
    "illegal": (STORE, "C[row * N + col + (1ll << 40)] = acc;"),
    # all four lanes used, so the compiler must issue one 16-byte load (from a 4-byte aligned address)
    "misaligned": (LOAD, "{ const float4 v = reinterpret_cast<const float4*>(A + 1 + row * K)[k & 1];\n"
                         "          acc += (v.x + v.y + v.z + v.w) * B[k * N + col]; }"),
    # spins on a volatile global read: a volatile *local* was optimised away by NVRTC on the H200
    "hang": (BODY, "    const volatile int* flag = reinterpret_cast<const volatile int*>(A);\n"
                   "    while (flag[0] == flag[0]) { }\n" + BODY),
    "wrong": (STORE, "C[row * N + col] = acc + 1.0f;"),
    "compile": (BODY, "    this is not CUDA;\n" + BODY),
}


def faulty_family(faults: tuple[str, ...]) -> Family:
    """The naive kernel (8 x 8 threads) with one more parameter: which fault to inject."""
    return Family(
        name="faulty",
        doc="test-only: the naive kernel, broken on purpose",
        params=(Param("fault", faults, faults[0], "which fault"),
                Param("x_over", ("cols",), "cols", ""), Param("bx", (8,), 8, ""), Param("by", (8,), 8, "")),
        constraints=(THREADS,),
        template=NAIVE.template,
        geometry=NAIVE.geometry,
        tags={"x_over": "x"},
    )


def edit(source: str, old: str, new: str) -> str:
    assert source.count(old) == 1, f"{old!r} is not in the naive template once: did the template change?"
    return source.replace(old, new)


def faulty_render(config: Config, limits: Limits = Limits()) -> str:
    """codegen.render, then the fault that the config names (other families render as usual)."""
    source = render(config, limits)
    fault = config.values.get("fault") if config.family.name == "faulty" else None
    return edit(source, *EDITS[fault]) if fault in EDITS else source


class FaultyBackend:
    """Wraps a real backend inside the worker process and breaks the process on request."""

    def __init__(self, inner):
        self.inner = inner
        self.tick = lambda: None

    def __getattr__(self, name: str):
        return getattr(self.inner, name)

    def measure(self, job, source: str):
        fault = job.values.get("fault")
        if fault == "die":
            os.kill(os.getpid(), signal.SIGSEGV)
        if fault == "stall":
            self.tick()  # compiled; then never another word
            time.sleep(3600)
        if fault == "devfault":
            raise DeviceFault(f"{job.name}: CUDA_ERROR_ILLEGAL_ADDRESS (injected)")
        if fault == "envfault":
            raise EnvironmentFault("cannot use the kernel cache /injected: No space left on device")
        if fault == "slow":
            time.sleep(1.0)
        self.inner.tick = self.tick
        return self.inner.measure(job, source)


def faulty_sim(spec):
    from autotune.backends.child import WorkerSpec, build_backend

    return FaultyBackend(build_backend(WorkerSpec("sim", spec.shape, spec.seed, 0, spec.kernel_timeout)))


def faulty_cuda(spec):
    from autotune.backends.child import WorkerSpec, build_backend

    return FaultyBackend(build_backend(WorkerSpec("cuda", spec.shape, spec.seed, spec.device, spec.kernel_timeout)))


def logging_sim(spec):
    """A healthy emulator backend that appends each kernel it measures to $AUTOTUNE_TEST_LOG,
    so that a test can count measurements across processes."""
    from autotune.backends.child import WorkerSpec, build_backend

    inner = build_backend(WorkerSpec("sim", spec.shape, spec.seed, 0, spec.kernel_timeout))
    log = os.environ["AUTOTUNE_TEST_LOG"]

    class Logging(FaultyBackend):
        def measure(self, job, source):
            with open(log, "a") as f:  # O_APPEND: lines from several processes do not interleave
                f.write(f"{job.name} {os.getppid()}\n")
            return super().measure(job, source)

    return Logging(inner)
