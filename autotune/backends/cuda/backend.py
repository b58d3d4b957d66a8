"""The GPU backend: compile, verify against cuBLAS, then time with CUDA events.

One CudaBackend serves one shape on one device: inputs, the cuBLAS reference and the
cuBLAS time are made once, then every config is checked and timed against them.
"""
from __future__ import annotations

import time

import numpy as np

from autotune.backends.base import Backend
from autotune.backends.canary import broken, canary
from autotune.backends.cuda import compare as gpu_compare
from autotune.backends.cuda.buffers import (  # noqa: F401 (re-exported: where callers import them from)
    download,
    driver_result,
    poisoned,
    upload,
    upload_into,
)
from autotune.backends.cuda.cublas import Cublas
from autotune.backends.cuda.device import DeviceInfo, device_info, sm_clock_mhz
from autotune.backends.cuda.energy import Meter
from autotune.backends.cuda.exact import Exact, check_free
from autotune.backends.cuda.launch import Kernels, launch_config, load_kernel, load_kernels
from autotune.backends.cuda.problem import Problem, problem_bytes
from autotune.backends.cuda.timing import (
    HEAD_START_NAME,
    HEAD_START_SOURCE,
    HeadStart,
    nothing,
    powered,
    time_ms,
)
from autotune.backends.cuda.workspaces import Workspaces
from autotune.backends.outcome import COMPILE_ERROR, OK, WRONG, Fault, Outcome, Timing
from autotune.backends.reference import (
    FP32,
    FP32_TC,
    WIDE,
    element_bound,
    element_text,
    input_sets,
    judge,
    transposes,
)
from autotune.codegen import nvrtc as nvrtc
from autotune.errors import AutotuneError
from autotune.families.layouts import LAYOUTS
from autotune.space import Config, Operands, takes_blas, tight

CHECK_SHAPE = (131, 67, 93)  # an odd shape every variant must also get right (tails)

class DeviceFault(Fault):
    """The CUDA context is poisoned (illegal address, ...): this process cannot go on."""


def plain_operands(config: Config, M: int, N: int, K: int) -> Operands | None:
    """A BLAS=1 kernel handed a plain problem (contiguous A, B, C; one batch): C = A*B as alpha 1, beta 0."""
    return tight(M, N, K, *transposes(config.values)) if takes_blas(config.values) else None


def required_kernel(source: str, name: str, arch: str, dynamic_shared: int, device: int, what: str | None = None):
    """A kernel that must compile (not a search's trial, whose failure is a row): NVRTC through the
    cubin cache, loaded; a compile failure is one line naming `what` (default: the kernel)."""
    built = nvrtc.compile_source(source, name, arch)
    if not built.ok:
        raise AutotuneError(f"{what or name} does not compile for {arch}: {first_error(built.log)}")
    return load_kernel(built.cubin, name, dynamic_shared, device)


class GpuCompare:
    """The relative error of a device output against a device reference, reduced on the GPU
    (the kernel and its meaning: gpu_compare.py). Compiled once, through the cubin cache."""

    def __init__(self, dev, stream, arch: str, device: int, source: str = gpu_compare.SOURCE,
                 name: str = gpu_compare.NAME):
        self.kernel = required_kernel(source, name, arch, 0, device, "the comparison kernel")
        self.stream = stream
        self.partials = dev.allocate(gpu_compare.MAX_BLOCKS * gpu_compare.SUMS * 8, stream=stream)

    def compare(self, c, ref, n: int) -> gpu_compare.Comparison:
        """||c - ref|| / ||ref|| over n floats (inf if any of c is NaN or infinite), and ref's own sums."""
        from cuda.core import LaunchConfig, launch

        blocks = gpu_compare.blocks_for(n)
        config = LaunchConfig(grid=(blocks, 1, 1), block=(gpu_compare.THREADS, 1, 1))
        launch(self.stream, config, self.kernel, c, ref, np.int64(n), self.partials)
        return gpu_compare.from_partials(download(self.stream, self.partials, blocks, gpu_compare.SUMS, np.float64))

    def relative_error(self, c, ref, n: int) -> float:
        return self.compare(c, ref, n).error


class GpuElements:
    """The output furthest beyond the elementwise bound (reference.element_bound), found on the GPU
    (the kernel and its meaning: gpu_compare.ELEMENTS_SOURCE). Compiled once, through the cubin cache."""

    def __init__(self, dev, stream, arch: str, device: int):
        self.kernel = required_kernel(gpu_compare.ELEMENTS_SOURCE, gpu_compare.ELEMENTS_NAME, arch, 0, device,
                                      "the elementwise check kernel")
        self.stream = stream
        self.partials = dev.allocate(gpu_compare.MAX_BLOCKS * gpu_compare.ELEMENT_SLOTS * 8, stream=stream)

    def worst(self, c, ref, scale, n: int, K: int) -> gpu_compare.Worst:
        from cuda.core import LaunchConfig, launch

        blocks = gpu_compare.blocks_for(n)
        config = LaunchConfig(grid=(blocks, 1, 1), block=(gpu_compare.THREADS, 1, 1))
        factor = np.float64(element_bound(1.0, K))
        launch(self.stream, config, self.kernel, c, ref, scale, factor, np.int64(n), self.partials)
        return gpu_compare.worst_of(download(self.stream, self.partials, blocks, gpu_compare.ELEMENT_SLOTS, np.float64))


class Stopwatch:
    """Seconds per stage of a trial (recorded with the row: where a trial's time goes)."""

    def __init__(self) -> None:
        self._last = time.perf_counter()

    def lap(self) -> float:
        now = time.perf_counter()
        lap, self._last = now - self._last, now
        return round(lap, 4)


def bytes_needed(M: int, N: int, K: int) -> int:
    """Device memory for one shape: A, B, C, the reference and |A| . |B|, and the odd-shape check problem
    beside them (a prologue's workspace, a copy of B, is a config's own: where it does not fit, that
    config fails; fp32-tc's wide problem and float64 products are checked when first made)."""
    return problem_bytes(M, N, K) + problem_bytes(*CHECK_SHAPE)


def check_memory(M: int, N: int, K: int, total: int, device: int) -> None:
    """Refuse a shape that cannot fit, before allocating (an allocation failure mid-way is a
    CUDA error, not a sentence). Keeps 10% for cuBLAS's workspace and the kernels."""
    need = bytes_needed(M, N, K)
    if need > 0.9 * total:
        raise AutotuneError(f"{M}x{N}x{K} needs {need / 2**30:.1f} GiB for A, B, C and the reference but device "
                            f"{device} has {total / 2**30:.1f} GiB: use a smaller shape")


def total_memory(device: int) -> int:
    from cuda.bindings import driver

    (mem,) = driver_result(driver.cuDeviceTotalMem(driver.CUdevice(device)))
    return int(mem)


def first_error(log: str | None) -> str:
    """The line of an NVRTC log that says what is wrong (the log ends in a NUL and a summary)."""
    lines = [line.strip() for line in (log or "").replace("\x00", "").splitlines() if line.strip()]
    return next((line for line in lines if "error" in line), lines[-1] if lines else "NVRTC failed")[:300]


class CudaBackend(Backend):
    name = "cuda"
    compile_ahead = True  # NVRTC per trial: the search compiles the next trials meanwhile (pipeline.py)

    def __init__(self, M: int, N: int, K: int, device: int = 0, seed: int = 0):
        from cuda.core import Device

        self.info: DeviceInfo = device_info(device)
        check_memory(M, N, K, total_memory(device), device)
        self.tick = nothing  # a worker process sets this to report progress to its parent
        self.dev = Device(device)
        self.dev.set_current()
        self.stream = self.dev.create_stream()
        self.workspaces = Workspaces()  # a prologue's (blocked's PB=1), kept across trials
        self.blas = Cublas(int(self.stream.handle))
        self.compare = GpuCompare(self.dev, self.stream, self.info.arch, self.info.index)
        self.head_start = HeadStart(required_kernel(HEAD_START_SOURCE, HEAD_START_NAME, self.info.arch, 0,
                                                    self.info.index, "the timing head start"), self.stream)
        self.meter = Meter.open(self.info.uuid)  # the board's power through NVML; None: every watts stays NULL
        self.compare64: GpuCompare | None = None  # against a float64 reference (fp32-tc), built at the first need
        self.shape, self.seed = (M, N, K), seed
        self.main = Problem(self.dev, self.stream, self.blas, M, N, K, seed)
        self.check = Problem(self.dev, self.stream, self.blas, *CHECK_SHAPE, seed + 1)
        self.wide: Problem | None = None  # fp32-tc's second input set at the search shape, made at the first need
        self.elements = GpuElements(self.dev, self.stream, self.info.arch, self.info.index)
        for p in (self.main, self.check):
            self._guard(p)
        self._canary()
        self.baseline = nn = self._time_baseline()
        self.layout_baselines = self._time_layouts(nn)
        self.baseline_clock = sm_clock_mhz(self.info.uuid)
        self.limits, self.peak_tflops, self.device = self.info.limits, self.info.peak_tflops, str(self.info.index)
        self.min_launch_s = self.baseline.median_ms / 1e3  # a shorter watchdog would stop even the best kernel

    def _time_baseline(self) -> Timing:
        """cuBLAS's time for the search's problem: what every kernel's time is compared with."""
        p = self.main
        return time_ms(lambda: self.blas.sgemm(int(p.a.handle), int(p.b.handle), int(p.c.handle), p.M, p.N, p.K),
                       self.stream, min_reps=20, head_start=self.head_start, meter=self.meter)

    def _time_layouts(self, nn: Timing) -> dict[str, Timing]:
        """cuBLAS in each layout on the same buffers (a transposed operand has as many elements)."""
        p, out = self.main, {"NN": nn}
        for name, (a_t, b_t) in LAYOUTS.items():
            if name == "NN":
                continue
            ta, tb = bool(a_t), bool(b_t)
            ops = tight(p.M, p.N, p.K, ta, tb)
            out[name] = time_ms(lambda: self.blas.sgemm_strided(int(p.a.handle), int(p.b.handle), int(p.c.handle),
                                                                 p.M, p.N, p.K, ta, tb, ops),
                                self.stream, min_reps=20, head_start=self.head_start, meter=self.meter)
        return out

    def _canary(self) -> None:
        """Compile, load and check the known-good kernel (backends.canary) at the odd shape."""
        config, source = canary()
        fix = "check the CUDA driver and cuda-python's NVRTC (pip install '.[gpu]')"
        built = nvrtc.compile_source(source, config.name, self.info.arch)
        if not built.ok:
            raise broken(f"NVRTC for {self.info.arch}", config, Outcome(COMPILE_ERROR, reason=first_error(built.log)),
                         fix)
        kernels = load_kernels(built.cubin, config, 0, self.info.index)
        err, _, wrong = self._verify(kernels, config, self.check)
        if wrong:
            raise broken(f"device {self.info.index}", config, Outcome(WRONG, reason=wrong, err=err), fix)

    @property
    def launch_shapes(self) -> tuple[tuple[int, int, int], ...]:
        return (self.shape, CHECK_SHAPE)  # every kernel is also checked at an odd shape

    @property
    def provenance(self) -> dict:
        i = self.info
        return {"gpu_name": i.name, "gpu_uuid": i.uuid, "arch": i.arch, "driver_version": i.driver_version,
                "nvrtc_version": nvrtc.nvrtc_version(), "cublas_version": self.blas.version()}

    def measure(self, config: Config, source: str) -> Outcome:
        clock = Stopwatch()
        built = nvrtc.compile_source(source, config.name, self.info.arch)
        if not built.ok:
            return Outcome(COMPILE_ERROR, reason=first_error(built.log), extra={"compile_log": built.log})
        self.tick()
        problems = self._problems_for(config)  # before the try: no room for them is the environment's fault
        if config.family.precision == FP32_TC:
            for p in problems[:-1]:  # the search shape's, one per input set: each its float64 product
                self._exact(p)
        stages = {"t_compile_s": clock.lap()}  # a cache hit when the search compiled it ahead
        try:
            kernel = load_kernels(built.cubin, config, config.geometry(*self.shape[:2], self.limits).shared_bytes, self.info.index)
            extra = {"num_regs": kernel.main.attributes.num_regs,
                     "static_shared": kernel.main.attributes.shared_size_bytes}
            row_errors: tuple[float, float | None] | None = None  # the search shape's: its verdict comes first
            for problem in problems:
                err, err_ref, wrong = self._verify(kernel, config, problem)
                if wrong:
                    return Outcome(WRONG, reason=wrong, err=err, err_ref=err_ref, extra=extra)
                row_errors = row_errors or (err, err_ref)
                self.tick()
            assert row_errors is not None  # set by the loop over the problems
            err, err_ref = row_errors
            stages["t_verify_s"] = clock.lap()

            def run() -> None:
                self._launch(kernel, config, self.main)

            timing = time_ms(run, self.stream, tick=self.tick, head_start=self.head_start)
            stages["t_time_s"] = clock.lap()
            extra["sm_clock_mhz"] = sm_clock_mhz(self.info.uuid)  # the timed runs' clock, before the power burst
            stages["t_clock_s"] = clock.lap()  # nvidia-smi where NVML fails: recorded to see what it costs
            timing = powered(timing, run, self.stream, self.meter, self.tick)
            stages["t_energy_s"] = clock.lap()  # the power burst (cuda/energy.py); 0 without NVML
        except Exception as exc:  # a fault poisons the context; report it, then stop the process
            raise DeviceFault(f"{config.name}: {exc}") from exc
        return Outcome(OK, err=err, err_ref=err_ref, timing=timing, extra={**extra, **stages})

    def _problems_for(self, config: Config) -> tuple[Problem, ...]:
        """The problems a kernel is verified on, in order: the search shape on each input set of its contract
        (reference.input_sets; the first's verdict and errors come first), then the odd check shape.
        What fp32-tc's wide set costs. Per trial: one more run of the kernel at the search shape (a trial
        already runs it once to verify and 4 to 21 times to time it, timing.time_ms) and three reductions
        over its M x N outputs (the two guards and the float64 comparison), each a read of C and a download
        of a few KiB; small beside the compile. Once per backend, at its first fp32-tc kernel: the wide
        inputs drawn on the host and uploaded, two SGEMMs (their reference and |A| . |B|), a DGEMM, and
        problem_bytes + 8 M N bytes of device memory (refused in one line where they do not fit)."""
        if WIDE not in input_sets(config.family.precision):
            return self.main, self.check
        if self.wide is None:
            M, N, K = self.shape
            check_free(M, N, K, problem_bytes(M, N, K), "the wide inputs (fp32-tc's second input set)")
            self.wide = Problem(self.dev, self.stream, self.blas, M, N, K, self.seed, WIDE)
            self._guard(self.wide)
        return self.main, self.wide, self.check

    def _guard(self, p: Problem) -> None:
        """Record the sums of p's reference and scale while intact: each verification compares them (_verify)."""
        p.ref_sums = self.compare.compare(p.ref_dev, p.ref_dev, p.M * p.N).ref_sums
        p.scale_sum = self.elements.worst(p.ref_dev, p.ref_dev, p.scale_dev, p.M * p.N, p.K).scale_sum

    def _launch(self, kernels: Kernels, config: Config, p: Problem, poison: bool = False) -> None:
        """All of the config's launches on the problem; poison: a verification's (space.Prologue's
        workspace NaN-filled first)."""
        launch_config(self.stream, kernels, config, config.geometry(p.M, p.N, self.limits), *p.operands(config), p.c, p.M, p.N,
                      p.K, plain_operands(config, p.M, p.N, p.K), self.workspaces, poison)

    def _exact(self, p: Problem) -> Exact:
        """The problem's float64 product and cuBLAS FP32's error against it, made once."""
        if self.compare64 is None:
            self.compare64 = GpuCompare(self.dev, self.stream, self.info.arch, self.info.index,
                                        gpu_compare.SOURCE64, gpu_compare.NAME64)
        if p.exact is None:
            p.exact = Exact(self.dev, self.stream, self.blas, self.compare64, p.host, p.ref_dev, p.M, p.N, p.K)
        return p.exact

    def _verify(self, kernels: Kernels, config: Config, p: Problem) -> tuple[float, float | None, str | None]:
        """The output's relative error under its family's contract (reference.judge), cuBLAS FP32's
        own error (fp32-tc only), and why the output is wrong (None: it is right).
        The contract is the search shape's, on each of its input sets (p.inputs). The odd check shape is
        there for the tails and guards, which a wrong one breaks by far more than any rounding, so it is held
        to the FP32 tolerance whatever the family: at its K=93 a 3xTF32 product's own rounding outweighs
        twice the error of FP32's short sums, which says nothing of the kernel at the shape it is tuned for."""
        p.poison()
        self._launch(kernels, config, p, poison=True)
        result = self.compare.compare(p.c, p.ref_dev, p.M * p.N)  # also under fp32-tc: the sums guard ref_dev
        shape = "x".join(map(str, (p.M, p.N, p.K)))
        worst = self.elements.worst(p.c, p.ref_dev, p.scale_dev, p.M * p.N, p.K)  # every family: the guard
        if result.ref_sums != p.ref_sums or worst.scale_sum != p.scale_sum:  # it wrote past its output: undo
            p.restore_reference()
            p.restore_scale()
            return (float("inf"), None,
                    f"wrote outside its output at {shape} (over the reference or |A|.|B|, now restored)")
        precision = config.family.precision if p is not self.check else FP32
        if precision != FP32_TC:
            why = judge(precision, result.error)
            if why is None and config.family.precision == FP32 and worst.ratio > 1:  # not fp32-tc's
                why = element_text(*divmod(worst.index, p.N), worst.error, worst.bound)
            return result.error, None, why and f"{why} at {shape}"
        exact = self._exact(p)
        err = exact.error_of(p.c)
        if err is None:
            return (float("inf"), exact.err_ref,
                    f"wrote outside its output at {shape} (over the float64 reference, now restored)")
        why = judge(precision, err, exact.err_ref, p.inputs)
        return err, exact.err_ref, why and f"{why} at {shape}"


class RunError(Exception):
    """A verify-run failure with a kind, like the emulator's SimError."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind, self.message = kind, message


class GpuRunner:
    """verify's runner on the GPU: one launch on a NaN-poisoned C, compared by the caller."""

    def __init__(self, device: int = 0):
        from cuda.core import Device

        self.info = device_info(device)
        self.dev = Device(device)
        self.dev.set_current()
        self.stream = self.dev.create_stream()
        self.workspaces = Workspaces()

    def __call__(self, config: Config, source: str, geo, A, B, M: int, N: int, K: int) -> np.ndarray:
        built = nvrtc.compile_source(source, config.name, self.info.arch)
        if not built.ok:
            raise RunError("compile", first_error(built.log))
        kernels = load_kernels(built.cubin, config, geo.shared_bytes, self.info.index)
        a, b = upload(self.dev, self.stream, A), upload(self.dev, self.stream, B)
        c = poisoned(self.dev, self.stream, M, N)
        try:
            launch_config(self.stream, kernels, config, geo, a, b, c, M, N, K, plain_operands(config, M, N, K),
                          self.workspaces, poison=True)
            return download(self.stream, c, M, N)
        except Exception as exc:
            raise DeviceFault(f"{config.name}: {exc}") from exc
