"""The emulator as a search backend: small shapes only, results recorded as backend "sim".

Its "time" is the emulator's wall time, which says nothing about a GPU; it is recorded so
that the whole search loop can run (and be tested) without one. Rows carry backend "sim"
and a host name as the GPU, so they are never mixed with GPU results or offered as GPU bests.
"""
from __future__ import annotations

import platform
import time

import numpy as np

from autotune.backends import sim
from autotune.backends.base import Backend
from autotune.backends.canary import broken, canary
from autotune.backends.outcome import COMPILE_ERROR, LAUNCH_ERROR, OK, TIMEOUT, WRONG, Outcome, Timing
from autotune.backends.reference import (
    FP32_TC,
    WIDE,
    abs_product,
    element_violation,
    fp32_error,
    input_sets,
    judge,
    random_inputs,
    reference,
    relative_error,
    stored,
    transposes,
    wide_inputs,
)
from autotune.backends.sim.build import build_kernel, compiler
from autotune.backends.sim.runner import DEFAULT_TIMEOUT_S
from autotune.backends.strided import Strided, strided_error, strided_inputs
from autotune.errors import AutotuneError
from autotune.space import Config, Limits, Operands, batched, takes_blas, tight

MAX_WORK = 2**27  # M*N*K: about 512^3, a few seconds per variant on the emulator
# What each emulator failure is recorded as: an endless loop is a timeout like on the GPU,
# memory errors, barrier errors and crashes are what a GPU would report as a failed launch.
STATUS_OF_KIND = {"compile": COMPILE_ERROR, "timeout": TIMEOUT, "barrier": LAUNCH_ERROR,
                  "out_of_bounds": LAUNCH_ERROR, "crash": LAUNCH_ERROR}


def check_emulated(shapes: list[tuple[int, int, int]], batch: int = 1) -> None:
    """Refuse, in one line, shapes the emulator would take minutes a variant over (MAX_WORK)."""
    big = ["x".join(map(str, s)) for s in shapes if s[0] * s[1] * s[2] * batch > MAX_WORK]
    if big:
        what = f"{batch} x {big[0]}" if batch > 1 else big[0]
        raise AutotuneError(f"{what}{f' and {len(big) - 1} other shape(s)' if len(big) > 1 else ''} too large for "
                            f"the emulator (batch*M*N*K at most 2**27, about 512^3): use smaller shapes or --backend cuda")


class SimBackend(Backend):
    name = "sim"
    baseline = None  # no cuBLAS on the CPU
    explain = False  # the SASS model describes a GPU, not the emulator

    def __init__(self, M: int, N: int, K: int, seed: int = 0, timeout: float = DEFAULT_TIMEOUT_S, batch: int = 1,
                 limits: Limits = Limits()):
        check_emulated([(M, N, K)], batch)
        self.shape, self.batch, self.seed = (M, N, K), batch, seed
        # the device it stands in for: Limits(sms=4) gives a persistent grid (streamk) of a few blocks, so that
        # the emulator's small shapes run it as a GPU runs large ones
        self.limits = limits
        self._strided: dict[tuple[bool, bool], tuple[Operands, Strided]] = {}  # per layout, made at its first kernel
        self.timeout = timeout  # seconds one emulated launch may take (the kernel watchdog)
        self.launch_limit_s = timeout  # the emulator stops a run itself
        self.device = "sim"
        self.A, self.B = random_inputs(M, N, K, seed)
        self.ref = reference(self.A, self.B)
        self.scale = abs_product(self.A, self.B)  # the elementwise bound's |A| . |B|
        self._err_ref: float | None = None  # fp32-tc: FP32's own error here, computed at the first need
        self._wide: tuple[np.ndarray, np.ndarray, np.ndarray, float] | None = None  # fp32-tc: A, B, ref, err_ref
        self.tick = lambda: None  # a worker process sets this to report progress to its parent
        self.min_launch_s = self._canary()

    @property
    def provenance(self) -> dict:
        host = platform.node() or "host"
        return {"gpu_name": "CPU emulator", "gpu_uuid": f"sim-{host}", "arch": "host",
                "driver_version": "", "nvrtc_version": ""}

    def measure(self, config: Config, source: str) -> Outcome:
        return self._measure(config, source, self.timeout)

    def _canary(self) -> float:
        """Build and run the known-good kernel (backends.canary); the seconds its run takes."""
        config, source = canary()
        fix = f"check the host compiler {compiler()!r} (CXX) and its AddressSanitizer"
        try:
            build_kernel(source, config.name)  # apart, so that the time below is the run's alone
        except sim.SimError as exc:
            raise broken("the emulator", config, Outcome(COMPILE_ERROR, reason=exc.message), fix) from None
        outcome = self._measure(config, source, max(self.timeout, DEFAULT_TIMEOUT_S))
        if outcome.status != OK or outcome.timing is None:
            raise broken("the emulator", config, outcome, fix)
        return outcome.timing.median_ms / 1e3

    def _measure(self, config: Config, source: str, timeout: float) -> Outcome:
        M, N, K = self.shape
        start = time.perf_counter()
        try:
            build_kernel(source, config.name, takes_blas(config.values))  # compile first (cached), so that a watchdog sees it done
            self.tick()
            if self.batch > 1 and takes_blas(config.values):  # the plain canary runs one product; the search plans no other plain kernel here
                return self._measure_batch(config, source, timeout, start)
            A, B = stored(self.A, self.B, config.values)  # the reference, A @ B, is every layout's
            C = sim.run(config, source, config.geometry(M, N, self.limits), A, B, M, N, K, timeout)
        except sim.SimError as exc:
            return Outcome(STATUS_OF_KIND[exc.kind], reason=f"{exc.kind}: {exc.message}"[:300])
        ms = (time.perf_counter() - start) * 1e3  # the uniform run's alone: the wide set's below is fp32-tc's extra
        err = relative_error(C, self.ref)
        precision = config.family.precision
        err_ref = self.err_ref() if precision == FP32_TC else None
        why = judge(precision, err, err_ref) or element_violation(C, self.ref, self.scale, K, precision)
        if why:
            return Outcome(WRONG, reason=why, err=err, err_ref=err_ref)
        if WIDE in input_sets(precision):  # the fp32-tc contract's second input set
            wide = self._measure_wide(config, source, timeout)
            if wide.status != OK:
                return wide
        return Outcome(OK, err=err, err_ref=err_ref, timing=Timing(ms, ms, ms, 1))

    def _measure_wide(self, config: Config, source: str, timeout: float) -> Outcome:
        """The kernel on the wide inputs (reference.wide_inputs), held to fp32-tc against their own float64
        product and numpy FP32's error on them: OK (no timing) or why not. One more emulated run per trial."""
        M, N, K = self.shape
        if self._wide is None:
            A, B = wide_inputs(M, N, K, self.seed)
            ref = reference(A, B)
            self._wide = A, B, ref, fp32_error(A, B, ref)
        A, B, ref, err_ref = self._wide
        try:
            C = sim.run(config, source, config.geometry(M, N, self.limits), *stored(A, B, config.values), M, N, K,
                        timeout)
        except sim.SimError as exc:
            return Outcome(STATUS_OF_KIND[exc.kind], reason=f"{exc.kind} on {WIDE} inputs: {exc.message}"[:300])
        err = relative_error(C, ref)
        why = judge(FP32_TC, err, err_ref, WIDE)
        return Outcome(WRONG, reason=why, err=err, err_ref=err_ref) if why else Outcome(OK, err=err, err_ref=err_ref)

    def _measure_batch(self, config: Config, source: str, timeout: float, start: float) -> Outcome:
        """A strided batch of tight operands (space.blas.tight), checked against float64 per batch."""
        M, N, K = self.shape
        layout = transposes(config.values)
        if layout not in self._strided:
            ops = tight(M, N, K, *layout, batch=self.batch)
            self._strided[layout] = ops, strided_inputs(M, N, K, *layout, ops, self.seed)
        ops, given = self._strided[layout]
        C = sim.run_strided(source, config.name, batched(config.geometry(M, N), self.batch), M, N, K, ops,
                            given.A, given.B, given.C, timeout=timeout)
        ms = (time.perf_counter() - start) * 1e3
        err = strided_error(C, given, M, N, ops)
        why = judge(config.family.precision, err)
        if why:
            return Outcome(WRONG, reason=why, err=err)
        return Outcome(OK, err=err, timing=Timing(ms, ms, ms, 1))

    def err_ref(self) -> float:
        """numpy's FP32 product's error against the float64 reference: cuBLAS FP32's stand-in."""
        if self._err_ref is None:
            self._err_ref = fp32_error(self.A, self.B, self.ref)
        return self._err_ref
