"""The backends a search can run on, one registered object each (BackendKind): what callers branch on
(it times on GPUs, it emulates, it replays a dataset) and how a worker builds it. The backends
themselves are imported only when one is built, so the command line lists the names (BACKENDS)
without loading CUDA or the emulator. An unknown name is refused in one line (backend_kind)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol

from autotune.errors import registered


class WorkerSpec(Protocol):
    """What building a backend reads of a worker's spec (backends.child.WorkerSpec, which imports this
    module: the protocol keeps the two out of an import cycle)."""

    @property
    def shape(self) -> tuple[int, int, int]: ...
    @property
    def batch(self) -> int: ...
    @property
    def device(self) -> int: ...
    @property
    def seed(self) -> int: ...
    @property
    def kernel_timeout(self) -> float | None: ...
    @property
    def replay_db(self) -> str | None: ...


@dataclass(frozen=True)
class BackendKind:
    name: str
    doc: str
    build: Callable[[WorkerSpec], Any]  # the backend a worker runs (backends.child.build_backend)
    # It times kernels on GPUs, one worker per device (--device/--devices choose them); its times are GPU times.
    on_gpus: bool = False
    # It runs the kernels in the CPU emulator: small shapes only (sim.backend.MAX_WORK).
    emulated: bool = False
    # It answers from a recorded results database (--replay-db) instead of running anything.
    replays: bool = False
    # It can time several products per launch (--batch); a replayed dataset is of one batch.
    batches: bool = True


def _cuda(spec: WorkerSpec) -> Any:
    M, N, K = spec.shape
    if spec.batch > 1:
        from autotune.backends.cuda.batched import BatchedCudaBackend

        return BatchedCudaBackend(M, N, K, device=spec.device, seed=spec.seed, batch=spec.batch)
    from autotune.backends.cuda.backend import CudaBackend

    return CudaBackend(M, N, K, device=spec.device, seed=spec.seed)


def _sim(spec: WorkerSpec) -> Any:
    from autotune.backends.sim.backend import SimBackend
    from autotune.backends.sim.runner import DEFAULT_TIMEOUT_S

    M, N, K = spec.shape
    return SimBackend(M, N, K, seed=spec.seed, timeout=spec.kernel_timeout or DEFAULT_TIMEOUT_S, batch=spec.batch)


def _replay(spec: WorkerSpec) -> Any:
    from autotune.backends.replay import ReplayBackend

    assert spec.replay_db is not None, "--backend replay without --replay-db"  # checked before any worker starts
    return ReplayBackend(spec.replay_db, spec.shape)


# In the order the command line lists them.
REGISTRY: dict[str, BackendKind] = {k.name: k for k in (
    BackendKind("cuda", "the GPU: NVRTC-compiled kernels timed with CUDA events against cuBLAS", _cuda, on_gpus=True),
    BackendKind("sim", "the CPU emulator: no GPU, small shapes, times that are not GPU times", _sim, emulated=True),
    BackendKind("replay", "a recorded results database (--replay-db) answered again, nothing run", _replay,
                replays=True, batches=False),
)}
BACKENDS = tuple(REGISTRY)


def backend_kind(name: str) -> BackendKind:
    """The registered backend of that name; an unknown name is refused in one line."""
    return registered(REGISTRY, name, "backend", "--backend")
