"""Kernel runs in a child process: a fault, a hang or a crash costs one row, never the search.

The search (the parent) never touches CUDA. Each WorkerBackend starts a child process
(multiprocessing, "spawn": no CUDA state is ever inherited; backends.child) that builds one backend
(CudaBackend for one shape and device, or SimBackend) and answers one request at a time
over a pipe. The whole protocol:
  parent -> child  ("measure", Job, source)  Job: the kernel's name and its launch geometries
                   ("shape", (M, N, K))      build the backend again at another shape in this process
                                             (its CUDA context and loaded libraries kept), then ready
                   ("stop",)                 exit now
  child -> parent  ("ready", Ready)          once, when the backend is built
                   ("error", message, env)   instead of ready (the backend cannot be built) or of an
                                             outcome (no kernel can be measured): the search at this shape
                                             stops; env True: the machine is at fault (EnvironmentFault),
                                             at every shape alike, so a suite or cover stops too
                   ("beat",)                 progress inside a measurement (compiled, a launch ended)
                   ("outcome", Outcome)      the answer to a measure
                   ("fault", message)        the kernel poisoned the context; the child then exits

The watchdog (in the parent): from the request to the first message a child may take
`first_s` (compile plus a few launches), then `beat_s` between messages (a few launches).
Past that the parent kills the child's process group and records `timeout`. A child that
dies records `launch_error` with how it died; a fault records `launch_error` with its
message. The next request starts a fresh child, so the search goes on. A child whose parent
is gone (killed) exits quietly.

A search of many shapes in turn (autotune cover, the suite) keeps its workers (pool.KeptWorkers): each
later shape is a "shape" request to the same child (WorkerBackend.reshape), not a new process.
"""
from __future__ import annotations

import multiprocessing as mp
import os
import signal
import socket
import time
from dataclasses import dataclass, field, replace
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess

from autotune.backends.base import Backend, Job
from autotune.backends.child import Ready, WorkerSpec, child_main
from autotune.backends.kinds import REGISTRY
from autotune.backends.outcome import LAUNCH_ERROR, TIMEOUT, Outcome, Timing
from autotune.backends.spawn import MAIN_GUARD_HINT, REIMPORTED_MAIN, sigint_ignored_by_children
from autotune.errors import AutotuneError, EnvironmentFault
from autotune.space import Config, Limits

SLOWDOWN = 1000  # a launch may take this many times cuBLAS's time at the shape...
MIN_LAUNCH_S = 1.0  # ...but never less than this (first-launch module loading, a busy node)
COMPILE_S = 120.0  # NVRTC or g++ for one kernel, cache cold, on a loaded host
LAUNCHES_PER_BEAT = 3  # the most launches between two beats (a warm-up and a timed run; one spare)
START_S = 600.0  # building a backend: cuBLAS handle, inputs, the reference and its timing
STOP_S = 5.0  # a child asked to stop gets this long before it is killed


def worker_name(index: int) -> str:
    return f"{socket.gethostname()}:{os.getpid()}:w{index}"


@dataclass
class WorkerBackend(Backend):
    """A Backend whose measurements run in a child process."""

    spec: WorkerSpec
    worker: str = field(default_factory=lambda: worker_name(0))
    compile_s: float = COMPILE_S
    start_s: float = START_S
    restarts: int = 0
    info: Ready | None = None

    def __post_init__(self) -> None:
        self._proc: BaseProcess | None = None
        self._conn: Connection | None = None

    # the Backend protocol: read-only views of the child's Ready where Backend declares plain attributes
    # (mypy: a property may not override a writable attribute; hence the ignore[override]s)
    @property
    def name(self) -> str:  # type: ignore[override]
        return self._ready().name

    @property
    def shape(self) -> tuple[int, int, int]:  # type: ignore[override]
        return self.spec.shape

    @property
    def batch(self) -> int:  # type: ignore[override]
        return self.spec.batch

    @property
    def baseline(self) -> Timing | None:  # type: ignore[override]
        return self._ready().baseline

    @property
    def baseline_clock(self) -> int | None:  # type: ignore[override]
        return self._ready().baseline_clock

    layout_baselines = property(lambda self: self._ready().layout_baselines)  # type: ignore[assignment]

    @property
    def explain(self) -> bool:  # type: ignore[override]
        return self._ready().explain

    @property
    def compile_ahead(self) -> bool:  # type: ignore[override]
        """GPU workers: the search compiles the next trials while this one measures (pipeline.py)."""
        return self._ready().compile_ahead

    @property
    def limits(self) -> Limits:  # type: ignore[override]
        return self._ready().limits

    @property
    def peak_tflops(self) -> float | None:  # type: ignore[override]
        return self._ready().peak_tflops

    @property
    def launch_shapes(self) -> tuple[tuple[int, int, int], ...]:
        return self._ready().launch_shapes

    @property
    def launch_limit_s(self) -> float | None:  # type: ignore[override]
        return self._ready().launch_limit_s

    @property
    def device(self) -> str:  # type: ignore[override]
        return self._ready().device

    @property
    def min_launch_s(self) -> float | None:  # type: ignore[override]
        return self._ready().min_launch_s

    @property
    def provenance(self) -> dict:
        ready = self._ready()
        return {**ready.provenance, "worker": self.worker, "device": ready.device}

    def measure(self, config: Config, source: str) -> Outcome:
        if self._proc is None:
            self.start()
            self.wait_ready()
        ready = self._ready()
        job = Job.of(config, ready.launch_shapes, ready.limits)
        self._pipe()[1].send(("measure", job, source))
        return self._answer(job.name)

    # watchdog limits
    def launch_s(self) -> float:
        """Seconds one launch may take: --kernel-timeout, the backend's own limit (the emulator
        stops a run itself), or SLOWDOWN x cuBLAS at this shape."""
        if self.spec.kernel_timeout:
            return self.spec.kernel_timeout
        own = self._ready().launch_limit_s
        if own:
            return own
        base = self._ready().baseline
        return max(SLOWDOWN * base.median_ms / 1e3, MIN_LAUNCH_S) if base else MIN_LAUNCH_S

    def beat_s(self) -> float:
        return LAUNCHES_PER_BEAT * self.launch_s() + 1.0

    def first_s(self) -> float:
        return self.compile_s + self.beat_s()

    # the child's life
    def start(self) -> None:
        ctx = mp.get_context("spawn")
        self._conn, theirs = ctx.Pipe()
        self._proc = ctx.Process(target=child_main, args=(theirs, self.spec), daemon=True,
                                 name=f"autotune-{self.worker}")
        with sigint_ignored_by_children():  # a Ctrl-C while the child imports is the parent's to act on
            self._proc.start()
        theirs.close()

    def reshape(self, shape: tuple[int, int, int]) -> "WorkerBackend":
        """Measure at another shape from now on: the same child builds its backend there (no new process,
        imports or CUDA context); a child that is gone (a kernel's fault ended it) starts afresh at the shape.
        Raises AutotuneError as wait_ready does (the worker is then closed)."""
        self.spec, self.info = replace(self.spec, shape=shape), None
        try:
            self._pipe()[1].send(("shape", shape))
        except (RuntimeError, OSError):  # no child, or its pipe is closed
            self._kill()
            self.start()
        return self.wait_ready()

    def wait_ready(self) -> "WorkerBackend":
        message = self._receive(self.start_s)
        if message is not None and message[0] == "ready":
            self.info = message[1]
            return self
        if message is None:
            why = f"the worker for {self._where()} could not start ({self._death('while starting')})"
        elif message[0] == "error":
            why = message[1]
            if message[2:] == (True,):
                self.close()
                raise EnvironmentFault(why)
        else:
            why = f"the worker for {self._where()} did not start within {self.start_s:g} s"
        self.close()
        raise AutotuneError(why)

    def close(self) -> None:
        if self._proc is None:
            return
        proc, conn = self._pipe()
        try:
            conn.send(("stop",))
            proc.join(STOP_S)
        except (OSError, ValueError, AssertionError):  # never started, or already gone
            pass
        self._kill()

    def _pipe(self) -> tuple[BaseProcess, Connection]:
        """The child and this side of its pipe, as start() made them."""
        if self._proc is None or self._conn is None:
            raise RuntimeError("the worker is not started: call start() and wait_ready()")
        return self._proc, self._conn

    def _ready(self) -> Ready:
        if self.info is None:
            raise RuntimeError("the worker is not started: call start() and wait_ready()")
        return self.info

    def _answer(self, kernel: str) -> Outcome:
        limit = self.first_s()
        while True:
            message = self._receive(limit)
            if message is None:
                return self._replace(LAUNCH_ERROR, f"{kernel}: the worker died ({self._death('during the run')})")
            if message == ("timeout",):
                return self._replace(TIMEOUT, f"{kernel}: no progress for {limit:.3g} s; the watchdog stopped it "
                                              f"(--kernel-timeout sets the seconds per launch)")
            if message[0] == "beat":
                limit = self.beat_s()
            elif message[0] == "outcome":
                return message[1]
            elif message[0] == "error":  # no row: the next kernel would fail the same way
                self._kill()
                raise (EnvironmentFault if message[2:] == (True,) else AutotuneError)(message[1])
            else:  # fault
                return self._replace(LAUNCH_ERROR, message[1])

    def _receive(self, limit: float):
        """The child's next message; ("timeout",) after `limit` seconds; None if it died."""
        proc, conn = self._pipe()
        deadline = time.monotonic() + limit
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return ("timeout",)
            try:
                if conn.poll(min(left, 1.0)):
                    return conn.recv()
            except (EOFError, OSError):
                return None
            if not proc.is_alive() and not conn.poll(0):
                return None

    def _replace(self, status: str, reason: str) -> Outcome:
        """Record-worthy outcome of a lost child; the next measure starts a fresh one."""
        self._kill()
        self.restarts += 1
        return Outcome(status, reason=" ".join(reason.split())[:300])

    def _kill(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.pid is not None and proc.is_alive():
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # the child and what it started (the emulator)
            except OSError:
                proc.kill()
            proc.join(STOP_S)
        if self._conn is not None:
            self._conn.close()

    def _death(self, when: str) -> str:
        if self._proc is not None:
            self._proc.join(1.0)  # a dead child's exit status is known once it is reaped
        code = self._proc.exitcode if self._proc else None
        if code == REIMPORTED_MAIN:
            return MAIN_GUARD_HINT
        if code is not None and code < 0:
            return f"killed by {signal.Signals(-code).name} {when}"
        return f"exit status {code} {when}"

    def _where(self) -> str:
        spec = self.spec
        kind = REGISTRY.get(spec.kind)
        return f"device {spec.device}" if kind and kind.on_gpus else f"backend {spec.kind}"

