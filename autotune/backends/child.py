"""The worker's child process (backends.worker has the parent and the protocol): what it builds, a backend
from a WorkerSpec, and how it serves the parent's requests over its pipe until told to stop, or until a
fault poisons its CUDA context. Asked for another shape, it builds the backend there in this same process.
"""
from __future__ import annotations

import gc
import importlib
import os
import signal
import threading
import time
from dataclasses import dataclass, replace

from autotune.backends.base import Backend
from autotune.backends.kinds import REGISTRY
from autotune.backends.outcome import Fault, Timing
from autotune.backends.spawn import deaf_to_sigint
from autotune.errors import AutotuneError, EnvironmentFault
from autotune.space import Limits


@dataclass(frozen=True)
class WorkerSpec:
    """What a child builds. kind: "cuda", "sim", "replay", or "module:function" (a factory taking the
    spec; tests use it to wrap a backend with injected faults)."""

    kind: str
    shape: tuple[int, int, int]
    seed: int = 0
    device: int = 0
    kernel_timeout: float | None = None  # seconds per launch; None: derived (see launch_s)
    replay_db: str | None = None  # kind "replay": the recorded results database it answers from
    batch: int = 1  # products per measurement, a strided batch (space.blas)


@dataclass(frozen=True)
class Ready:
    """A child's backend, as the parent sees it."""

    name: str
    shape: tuple[int, int, int]
    baseline: Timing | None
    baseline_clock: int | None
    provenance: dict
    explain: bool
    limits: Limits
    peak_tflops: float | None
    launch_shapes: tuple[tuple[int, int, int], ...]
    device: str  # the CUDA device index, or the backend's name where there is no GPU
    launch_limit_s: float | None = None  # the backend's own limit per launch (the emulator's), if any
    compile_ahead: bool = False  # it compiles with NVRTC per trial: the search compiles ahead (pipeline.py)
    min_launch_s: float | None = None  # what a known-good launch takes (Backend.min_launch_s)
    layout_baselines: dict[str, Timing] | None = None  # cuBLAS per layout (Backend.layout_baselines)


def build_backend(spec: WorkerSpec):
    kind = REGISTRY.get(spec.kind)
    if kind is not None:
        return kind.build(spec)
    module, _, function = spec.kind.partition(":")
    return getattr(importlib.import_module(module), function)(spec)


def ready_of(backend: Backend) -> Ready:
    return Ready(backend.name, tuple(backend.shape), backend.baseline, backend.baseline_clock,  # type: ignore[arg-type]
                 dict(backend.provenance), backend.explain, backend.limits, backend.peak_tflops,
                 tuple(tuple(s) for s in backend.launch_shapes), backend.device or backend.name,  # type: ignore[misc]
                 backend.launch_limit_s, backend.compile_ahead, backend.min_launch_s, backend.layout_baselines)


def _leave_with_parent() -> None:
    """Die with the parent, even one killed by SIGKILL: a kernel stuck in an endless loop must
    not hold the GPU forever. Kills the child's own process group (the emulator's runs too)."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os.killpg(os.getpgrp(), signal.SIGKILL)

    threading.Thread(target=watch, daemon=True).start()


def child_main(conn, spec: WorkerSpec) -> None:
    os.setsid()  # own process group: Ctrl-C in the terminal reaches the search, not the kernel in flight
    deaf_to_sigint()
    _leave_with_parent()
    backend = _built(conn, spec)
    while backend is not None:
        backend.tick = lambda: _send(conn, ("beat",))
        _send(conn, ("ready", ready_of(backend)))
        shape = _serve(conn, backend)
        if shape is None:
            return
        spec, backend = replace(spec, shape=shape), None
        gc.collect()  # the old shape's device buffers are freed before the new shape's are allocated
        backend = _built(conn, spec)


def _built(conn, spec: WorkerSpec):
    """The spec's backend; None once the parent is told why there is none (it turns that into one line)."""
    try:
        return build_backend(spec)
    except EnvironmentFault as exc:  # the machine: every shape would fail the same way
        _send(conn, ("error", str(exc), True))
    except AutotuneError as exc:  # this shape (too large for the device, say)
        _send(conn, ("error", str(exc), False))
    except Exception as exc:
        _send(conn, ("error", f"{type(exc).__name__}: {exc}", False))
    return None


def _send(conn, message: tuple) -> None:
    try:
        conn.send(message)
    except OSError:  # the parent is gone (killed): nobody is left to answer, nor to read a traceback
        os._exit(0)


def _serve(conn, backend) -> tuple[int, int, int] | None:
    """Answer measurements until the parent asks for another shape (returned) or to stop (None)."""
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return None  # the parent is gone
        if message[0] == "shape":
            return message[1]
        if message[0] != "measure":
            return None
        _, job, source = message
        try:
            reply = ("outcome", backend.measure(job, source))
        except Fault as fault:
            _send(conn, ("fault", str(fault)))
            return None  # the context is poisoned: the parent starts a fresh child
        except AutotuneError as exc:  # not the kernel's: the machine's (EnvironmentFault), or this shape's (too
            _send(conn, ("error", str(exc), isinstance(exc, EnvironmentFault)))  # large for free memory, say)
            return None
        except Exception as exc:  # unexpected: report it as this kernel's failure and start afresh
            _send(conn, ("fault", f"{job.name}: {type(exc).__name__}: {exc}"))
            return None
        _send(conn, reply)
