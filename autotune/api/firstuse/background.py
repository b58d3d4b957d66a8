"""The background tuner of a `load(tune="background")` matmul: a bounded queue of call kinds and one
daemon thread that hands them, one at a time, to a Tuner (tuner.py).

The caller's cost (Matmul.on_library, once per call kind the matmul plans onto cuBLAS, not per call):
offer() holds one lock for a set lookup and a deque append, with no I/O and no wait, whatever the
tuner is doing (tests/test_firstuse.py bounds its median at 1 ms; it is a few microseconds). A call kind is
offered once per process: one whose tuning failed stays on cuBLAS. With MAX_PENDING waiting, an offer
is dropped, not kept: the matmul offers it again when it plans that call kind again (after the next
tuned shape, which drops every plan).
"""
from __future__ import annotations

import atexit
import logging
import threading
from collections import deque

from autotune.api.firstuse.tuner import Job, TuneFailed, Tuner
from autotune.api.matmul import Matmul
from autotune.api.operands import Layout
from autotune.families.layouts import layout_name
from autotune.space import Shape

MAX_PENDING = 64
log = logging.getLogger("autotune.api.firstuse")

Pending = tuple[int, Shape, str]  # (device, shape, layout name)


class Background:
    """Tunes the shapes a matmul runs on cuBLAS, in the background (the module's docstring)."""

    def __init__(self, matmul: Matmul, tuner: Tuner):
        self.matmul, self.tuner = matmul, tuner
        self.failures = 0
        self.dropped = 0  # offers refused because MAX_PENDING were waiting
        self._pending: deque[Pending] = deque()  # the head stays here while it is tuned: idle() waits for it
        self._seen: set[Pending] = set()
        self._changed = threading.Condition()
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="autotune-first-use", daemon=True)
        self._thread.start()
        atexit.register(self.close)  # a job in flight is stopped, not left running after the caller
        matmul.on_library = self.offer

    def offer(self, device: int, shape: Shape, layout: Layout) -> None:
        """Queue this call kind for tuning, unless offered before or the queue is full; never waits."""
        key = (device, shape, layout_name({"TA": layout.trans_a, "TB": layout.trans_b}))
        with self._changed:
            if key in self._seen or self._stopped:
                return
            if len(self._pending) >= MAX_PENDING:
                self.dropped += 1
                return
            self._seen.add(key)
            self._pending.append(key)
            self._changed.notify_all()

    def wait(self, timeout: float) -> bool:
        """Wait until every shape offered so far is tuned (or failed); False when `timeout` seconds passed first."""
        with self._changed:
            self._changed.wait_for(lambda: not self._pending or self._stopped, timeout)
            return not self._pending

    def close(self) -> None:
        """Take no more shapes and stop the one in flight (its committed rows stay)."""
        with self._changed:
            self._stopped = True
            self._changed.notify_all()
        self.tuner.stop()

    def _run(self) -> None:
        while True:
            with self._changed:
                self._changed.wait_for(lambda: self._pending or self._stopped)
                if self._stopped:
                    return
                device, shape, layout = self._pending[0]
            self._tune(device, shape, layout)
            with self._changed:
                self._pending.popleft()
                self._changed.notify_all()

    def _tune(self, device: int, shape: Shape, layout: str) -> None:
        """One shape: tuned, then chosen again at its next call; nothing raised out of this thread."""
        job = None
        try:
            job = Job(device, self.matmul.gpu_name(device), shape, layout)
            self.tuner.tune(job)
        except Exception as exc:  # the caller must never see it: logged, and the shape stays on cuBLAS
            self._failed(job.describe() if job else f"{shape} {layout}", exc)
            if isinstance(exc, TuneFailed) and exc.environment:
                self.close()  # every shape would fail the same way (no device): stop trying
        if self._stopped:
            return
        try:
            self.matmul.forget(shape)  # also after a failure: the rows it committed count
        except Exception as exc:
            self._failed(f"re-reading the database for {shape}", exc)

    def _failed(self, what: str, exc: Exception) -> None:
        self.failures += 1
        line = f"autotune: first-use tuning of {what} failed: {exc or type(exc).__name__}; it stays on cuBLAS"
        if self.failures == 1:  # said once; the others are there for a caller who asks the logger
            log.warning(line + " (further failures are logged at INFO level on logger autotune.api.firstuse)")
        else:
            log.info(line)


def background_of(matmul: Matmul) -> Background | None:
    """The background tuner attached to a matmul (load(tune="background")), if any."""
    owner = getattr(matmul.on_library, "__self__", None)
    return owner if isinstance(owner, Background) else None
