"""The Backend contract: what the search needs of a place that verifies and times kernels.

Every backend (cuda, sim, replay, the worker process that hosts one, a test's fake) subclasses
Backend, sets the attributes below in its constructor or as class attributes, and answers
`measure`. Nothing reads a backend through getattr defaults: an attribute missing here is a
missing attribute. A backend in a worker process (backends.worker) receives a Job in place of
the Config: what a backend reads of a config, and nothing that cannot cross a process boundary.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

from autotune.backends.outcome import Outcome, Timing
from autotune.space import Config, Launch, Limits, Prologue


class Backend(ABC):
    name: str  # "cuda", "sim", "replay": rows of one backend never mix with another's
    shape: tuple[int, int, int]  # (M, N, K) every measurement is at
    batch: int = 1  # products per measurement: > 1, a strided batch (space.blas), BLAS=1 kernels only
    baseline: Timing | None = None  # cuBLAS at this shape, timed in the same process; None without a GPU
    baseline_clock: int | None = None  # SM clock (MHz) read right after the baseline
    # cuBLAS at this shape in each layout ("NN", "NT", "TN", "TT": T, that operand stored transposed), which
    # cuBLAS's heuristics serve with other kernels: a kernel of a layout is compared with cuBLAS in that layout
    layout_baselines: dict[str, Timing] | None = None
    explain: bool = True  # rows get SASS counts and the ceiling model (only for GPU code)
    compile_ahead: bool = False  # NVRTC per trial: the search compiles the next trials meanwhile
    limits: Limits = Limits()  # what the device allows (constraints are checked against it)
    peak_tflops: float | None = None  # FP32 FMA peak of the device, for % of peak
    launch_limit_s: float | None = None  # the backend's own limit per launch, where it stops runs itself
    # what a known-good launch takes here (cuBLAS on the GPU, the canary on the emulator): a shorter
    # watchdog would record every kernel as a timeout
    min_launch_s: float | None = None
    device: str = ""  # the CUDA device index, or the backend's name where there is no GPU
    any_config: bool = True  # any valid config can be measured (a replay has its dataset's only; see search.fresh)

    @property
    def launch_shapes(self) -> tuple[tuple[int, int, int], ...]:
        """The (M, N, K) a measurement launches kernels at (the GPU adds an odd check shape)."""
        return (self.shape,)

    @property
    @abstractmethod
    def provenance(self) -> dict[str, Any]:
        """gpu_name, gpu_uuid, arch, driver and compiler versions: stored on every row."""

    @abstractmethod
    def measure(self, config: Config, source: str) -> Outcome:
        """Compile, verify and time one kernel. A kernel's failure is an Outcome; a fault that
        poisons the backend raises outcome.Fault (the worker then starts a fresh one)."""


@dataclass(frozen=True)
class _Family:
    """What a backend reads of a family: its name and the accuracy contract it is verified under."""

    name: str
    precision: str


@dataclass(frozen=True)
class Job:
    """A config as a backend reads it (name, values, geometry, prologue), without the family's
    constraint functions, which cannot cross a process boundary."""

    name: str
    family: _Family
    params: tuple[tuple[str, object], ...]
    launches: tuple[tuple[tuple[int, int], Launch], ...]
    prologues: tuple[tuple[tuple[int, int, int], Prologue | None], ...] = ()

    @staticmethod
    def of(config: Config, shapes: tuple[tuple[int, int, int], ...], limits: Limits | None = None) -> "Job":
        """The job of `config` at `shapes`, its launches for the device of `limits` (Config.geometry)."""
        launches = tuple(((M, N), config.geometry(M, N, limits)) for M, N, _ in shapes)
        prologues = tuple(((M, N, K), config.prologue(M, N, K)) for M, N, K in shapes)
        return Job(config.name, _Family(config.family.name, config.family.precision), config.params, launches, prologues)

    def prologue(self, M: int, N: int, K: int) -> Prologue | None:
        return dict(self.prologues)[(M, N, K)]

    @property
    def has_prologue(self) -> bool:
        return any(pre is not None for _, pre in self.prologues)

    @property
    def values(self) -> dict:
        return dict(self.params)

    def geometry(self, M: int, N: int, limits: Limits | None = None) -> Launch:
        """The launch Job.of computed (for the device it was given; `limits` is Config.geometry's, unused)."""
        return dict(self.launches)[(M, N)]
