"""A backend that needs no GPU: deterministic times derived from the config, a few
configs deliberately wrong. It lets the search, store and CLI be tested in CI. And a launcher
(autotune.load()'s device side) that records what it is asked."""
from __future__ import annotations

import contextlib
import time
import zlib
from types import SimpleNamespace

from autotune.backends.base import Backend
from autotune.backends.outcome import OK, WRONG, Outcome, Timing
from autotune.space import Config


def fake_ms(config: Config) -> float:
    v = config.values
    if config.family.name == "naive":
        return 20.0 if v["x_over"] == "cols" else 200.0
    # bigger tiles faster, padding slower, a small deterministic jitter per config
    jitter = (zlib.crc32(config.name.encode()) % 100) / 1000.0
    return 40.0 / v.get("T", 16) + 0.5 * v.get("pad", 0) + jitter  # other families: the jitter decides


class FakeBackend(Backend):
    name = "fake"
    explain = False  # no SASS model by default: analysing hundreds of configs would slow every test

    def __init__(self, M: int = 256, N: int = 256, K: int = 256):
        self.shape = (M, N, K)
        self.baseline = Timing(0.5, 0.49, 0.52, 20)
        self.measured: list[str] = []

    @property
    def provenance(self) -> dict:
        return {"gpu_name": "Fake GPU", "gpu_uuid": "fake-uuid", "arch": "sm_90", "driver_version": "0.0",
                "nvrtc_version": "0.0", "cublas_version": 0}

    def measure(self, config: Config, source: str) -> Outcome:
        assert config.name in source  # the backend receives the rendered kernel
        self.measured.append(config.name)
        if config.family.name == "tiled" and config.values["pad"] == 2 and config.values["T"] == 64:
            # deliberately fast but wrong: must never become the best
            return Outcome(WRONG, reason="relative error 0.5 > 1e-4", err=0.5, timing=None)
        ms = fake_ms(config)
        return Outcome(OK, err=1e-7, timing=Timing(ms, ms * 0.99, ms * 1.02, 5))


class CompilingFake(FakeBackend):
    """A GPU stand-in for a worker process: the search compiles its kernels ahead with NVRTC, as
    for a CUDA worker, and each measurement takes `seconds`."""
    compile_ahead = True

    def __init__(self, M: int = 256, N: int = 256, K: int = 256, seconds: float = 0.3):
        super().__init__(M, N, K)
        self.seconds = seconds

    def measure(self, config, source: str) -> Outcome:
        time.sleep(self.seconds)
        return super().measure(config, source)


def compiling_fake(spec) -> CompilingFake:
    """Worker factory: WorkerSpec("tests.fakes:compiling_fake", shape)."""
    return CompilingFake(*spec.shape)


GPU = "Fake GPU"


class FakeLauncher:
    """Records what the matmul asks of the device side."""

    def __init__(self, limits=None):
        self.loads, self.launches, self.workspaces = [], [], []
        self._limits = limits

    def device_name(self, device):
        return GPU

    def limits(self, device):
        from autotune.space import Limits

        return self._limits or Limits()

    def device_of(self, ptr):
        return 0

    def load(self, device, source, kernel, shared_bytes):
        self.loads.append((device, kernel, shared_bytes))
        return f"loaded {kernel}"

    def launch(self, device, kernel, launch, stream, a, b, c, shape, ops=None):
        self.launches.append({"device": device, "kernel": kernel, "launch": launch, "stream": stream,
                              "ptrs": (a, b, c), "shape": shape, "ops": ops})

    def prepare(self, device, kernel, launch, shape):
        """The short way of a repeated call: recorded as a launch marked fast."""
        def run(stream, a, b, c):
            self.launches.append({"device": device, "kernel": kernel, "launch": launch, "stream": stream,
                                  "ptrs": (a, b, c), "shape": shape, "ops": None, "fast": True})
            return 0
        return run

    def gemm(self, device, stream, a, b, c, shape, trans_a, trans_b, ops):
        self.launches.append({"device": device, "kernel": "cublas", "launch": None, "stream": stream,
                              "ptrs": (a, b, c), "shape": shape, "ops": ops, "trans": (trans_a, trans_b)})

    @contextlib.contextmanager
    def workspace(self, device, nbytes, stream):
        ptr = 0xF0000000 + len(self.workspaces)
        self.workspaces.append({"device": device, "bytes": nbytes, "stream": stream, "ptr": ptr, "freed_after": None})
        yield ptr
        self.workspaces[-1]["freed_after"] = len(self.launches)  # launches enqueued before the free


class DriverTypes:
    """The two value types of cuda.bindings.driver that the fake drivers of the workspace tests hand out."""

    @staticmethod
    def CUstream(handle: int) -> SimpleNamespace:  # noqa: N802  (the driver's own spelling)
        return SimpleNamespace(handle=handle)

    @staticmethod
    def CUdeviceptr(ptr: int) -> int:  # noqa: N802
        return ptr
