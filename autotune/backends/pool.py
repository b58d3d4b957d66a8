"""Which workers a search starts (devices, counts, the flags that conflict) and how it stops
on a signal: the first SIGINT or SIGTERM lets the trials in flight finish, the second stops now."""
from __future__ import annotations

import math
import signal
import sys
import threading
from contextlib import contextmanager
from dataclasses import replace
from typing import Iterator

from autotune.backends.child import WorkerSpec
from autotune.backends.cuda.device import NO_GPU
from autotune.backends.kinds import backend_kind
from autotune.backends.worker import WorkerBackend, worker_name
from autotune.errors import AutotuneError, NoDeviceError


def parse_devices(text: str | None, device: int | None) -> tuple[int, ...] | None:
    """--devices 0,1 or --device 0 (one of them), as indices; None when neither was given."""
    if text is not None and device is not None:
        raise AutotuneError("give either --device or --devices, not both (--devices 0 is --device 0)")
    if device is not None:
        return (device,)
    if text is None:
        return None
    parts = [p.strip() for p in text.split(",")]
    if not parts or not all(p.isdigit() for p in parts):
        raise AutotuneError(f"--devices {text!r} is not a list of device indices (for example --devices 0,1)")
    devices = tuple(int(p) for p in parts)
    if len(set(devices)) != len(devices):
        raise AutotuneError(f"--devices {text!r} names a device twice: one worker per GPU")
    return devices


def visible_devices() -> tuple[int, ...]:
    """Every GPU the driver shows (cuInit and a count: no context, nothing a kernel can poison)."""
    from autotune.backends.cuda.device import device_count

    count = device_count()
    if count == 0:
        raise NoDeviceError(NO_GPU)
    return tuple(range(count))


def worker_specs(kind: str, shape: tuple[int, int, int], seed: int, devices: tuple[int, ...] | None,
                 workers: int | None, kernel_timeout: float | None, replay_db: str | None = None,
                 batch: int = 1) -> list[WorkerSpec]:
    """One spec per worker. On the GPU one worker per device: two workers timing on one GPU
    would slow each other down and the times would say so."""
    if not backend_kind(kind).on_gpus:
        if devices is not None:
            raise AutotuneError(f"--device/--devices choose GPUs and do not apply to --backend {kind}; "
                                f"use --workers N for {kind} workers")
        if not backend_kind(kind).batches and batch != 1:
            raise AutotuneError("--batch does not apply to --backend replay: its datasets are of one batch")
        return [WorkerSpec(kind, shape, seed, 0, kernel_timeout, replay_db, batch) for _ in range(workers or 1)]
    devices = devices if devices is not None else visible_devices()
    count = workers or len(devices)
    if count > len(devices):
        raise AutotuneError(f"--workers {count} needs {count} GPUs but {len(devices)} are in use "
                            f"({','.join(map(str, devices))}): workers sharing a GPU disturb each other's "
                            f"times; use --workers {len(devices)} or list more --devices")
    return [WorkerSpec(kind, shape, seed, d, kernel_timeout, batch=batch) for d in devices[:count]]


def check_kernel_timeout(workers: list[WorkerBackend]) -> None:
    """A --kernel-timeout shorter than a known-good launch (cuBLAS on the GPU, the canary on the
    emulator) would record every kernel as a timeout: refuse it before the first trial."""
    for w in workers:
        limit, floor = w.spec.kernel_timeout, w.min_launch_s
        if limit and floor and limit < floor:
            raise AutotuneError(f"--kernel-timeout {limit:g} s is shorter than a known-good kernel takes on backend "
                                f"{w.name} at {'x'.join(map(str, w.shape))} ({floor:.3g} s): every kernel would "
                                f"time out; give at least --kernel-timeout {_ceil2(floor):g}, or leave it out")


def _ceil2(x: float) -> float:
    """x rounded up to two significant digits (a minimum that is never below x)."""
    step = 10.0 ** (math.floor(math.log10(x)) - 1)
    return math.ceil(round(x / step, 6)) * step


def check_same_model(workers: list) -> None:
    names = sorted({w.provenance["gpu_name"] for w in workers})
    if len(names) > 1:
        raise AutotuneError(f"the devices are different GPUs ({', '.join(names)}): times from different models "
                            f"do not mix in one study; search one model at a time with --devices")


@contextmanager
def stop_on_signals(stop: threading.Event) -> Iterator[None]:
    """First SIGINT/SIGTERM: set `stop` (the search ends after the trials in flight);
    second: KeyboardInterrupt now (the trials in flight leave no row and are measured next time)."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers belong to the main thread
        return

    def handler(signum, frame) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()
        stop.signum = signum  # type: ignore[attr-defined]
        print(f"\nautotune: {signal.Signals(signum).name}: stopping after the trials in flight "
              f"(send it again to stop at once)", file=sys.stderr, flush=True)

    old = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, signal.SIG_DFL if h is None else h)  # None: set outside Python; the default is closest


def exit_status(stop: threading.Event, interrupted: bool) -> int:
    """0 when the search ran to its end; 128 + the signal's number when a signal stopped it."""
    if not interrupted:
        return 0
    return 128 + int(getattr(stop, "signum", signal.SIGINT))


class KeptWorkers:
    """Workers kept across the searches of several shapes in turn (autotune cover, the suite): the first search
    starts them; each later one moves them to its shape (WorkerBackend.reshape), in the same child processes.
    A child's start (a process, its imports, a CUDA context, loading cuBLAS) is then paid once, not at every
    shape. The owner closes them at the end."""

    def __init__(self) -> None:
        self.workers: list[WorkerBackend] = []

    def at(self, specs: list[WorkerSpec]) -> list[WorkerBackend]:
        """Workers for these specs: the kept ones moved to the specs' shape where the specs differ in
        shape alone, else new ones (the kept closed)."""
        moved = [replace(w.spec, shape=s.shape) for w, s in zip(self.workers, specs)]
        if len(self.workers) == len(specs) and moved == specs:
            try:
                for w, s in zip(self.workers, specs):
                    if w.spec != s:
                        w.reshape(s.shape)
            except BaseException:
                self.close()
                raise
        else:
            self.close()
            self.workers = start_workers(specs)
        return self.workers

    def close(self) -> None:
        workers, self.workers = self.workers, []
        for w in workers:
            w.close()


def start_workers(specs: list[WorkerSpec], names: list[str] | None = None, **kw) -> list[WorkerBackend]:
    """Start every child at once (building a CUDA backend takes seconds), then wait for all."""
    workers = [WorkerBackend(spec, (names or [])[i] if names else worker_name(i), **kw)
               for i, spec in enumerate(specs)]
    try:
        for w in workers:
            w.start()
        for w in workers:
            w.wait_ready()
    except BaseException:
        for w in workers:
            w.close()
        raise
    return workers
