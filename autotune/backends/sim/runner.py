"""Run a rendered kernel on the CPU emulator: A and B in, C out, or a SimError.

Each run is a subprocess, so a kernel that corrupts memory or never ends cannot take
the caller down with it: AddressSanitizer reports the bad access and the process exits,
or the timeout kills it.
"""
from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from autotune.backends.reference import transposes
from autotune.backends.sim.build import build_kernel, sim_cache
from autotune.backends.sim.errors import SimError
from autotune.backends.sim.report import ASAN_EXIT, failure
from autotune.space import PROLOGUE_SUFFIX, Config, Launch, Operands, takes_blas, tight

DEFAULT_TIMEOUT_S = 60.0
# No leak checking (kernels do not allocate; LSan also fails under ptrace), and ASan's own
# exit status so that its reports are told from the harness's.
ASAN_OPTIONS = (
    f"detect_leaks=0:exitcode={ASAN_EXIT}:halt_on_error=1:abort_on_error=0:"
    "detect_stack_use_after_return=0:print_legend=0"
)


def run_kernel(
    source: str,
    name: str,
    launch: Launch,
    A: np.ndarray,
    B: np.ndarray,
    M: int,
    N: int,
    K: int,
    timeout: float = DEFAULT_TIMEOUT_S,
    transposed: tuple[bool, bool] = (False, False),
    blas: bool = False,
) -> np.ndarray:
    """C = the kernel's output for A (M x K) and B (K x N), float32 (M, N); `transposed` (TA, TB):
    A is given as K x M, B as N x K (reference.stored); blas: a BLAS=1 kernel, called with the
    operands as they are (leading dimensions the row lengths, alpha 1, beta 0, one batch).

    C starts as NaN, so outputs the kernel never writes show up as NaN.
    Raises SimError: compile, barrier, out_of_bounds, crash or timeout.
    """
    ta, tb = transposed
    A32, B32 = _operand(A, (K, M) if ta else (M, K), "A"), _operand(B, (N, K) if tb else (K, N), "B")
    if blas:
        C = np.full(M * N, np.nan, dtype=np.float32)  # unwritten shows
        ops = tight(M, N, K, ta, tb)
        return run_strided(source, name, launch, M, N, K, ops, A32.ravel(), B32.ravel(), C, timeout).reshape(M, N)
    return run_flat(source, name, launch, M, N, K, A32, B32, M * N, timeout).reshape(M, N)


def run_flat(source: str, name: str, launch: Launch, M: int, N: int, K: int, A: np.ndarray, B: np.ndarray,
             c_floats: int, timeout: float = DEFAULT_TIMEOUT_S) -> np.ndarray:
    """The kernel's C (c_floats floats, flat, NaN where unwritten) for flat buffers A and B of any size:
    a prologue's output is its workspace, which the kernel then reads as B. Raises SimError."""
    exe = build_kernel(source, name)
    header = np.array([M, N, K, *launch.grid, *launch.block, launch.shared_bytes], dtype=np.int32)
    sizes = np.array([A.size, B.size, c_floats], dtype=np.int64)
    buffers = b"".join(np.ascontiguousarray(x, dtype=np.float32).tobytes() for x in (A, B))
    with tempfile.TemporaryDirectory(prefix="sim-run-", dir=sim_cache()) as tmp:
        work = Path(tmp)
        (work / "in.bin").write_bytes(header.tobytes() + sizes.tobytes() + buffers)
        _execute(exe, work, name, timeout)
        C = np.fromfile(work / "out.bin", dtype=np.float32)
    if C.size != c_floats:
        raise SimError("crash", f"kernel {name}: the emulator wrote {C.size} floats of C, expected {c_floats}")
    return C


def run_strided(source: str, name: str, launch: Launch, M: int, N: int, K: int, ops: Operands, A: np.ndarray,
                B: np.ndarray, C: np.ndarray, timeout: float = DEFAULT_TIMEOUT_S) -> np.ndarray:
    """C's buffer after a BLAS=1 kernel (autotune/space/blas.py) ran on these flat buffers, each
    exactly as long as the call spans (space.buffer_sizes), so that ASan sees any float past them.
    Raises SimError as run_kernel does."""
    exe = build_kernel(source, name, blas=True)
    header = np.array([M, N, K, *launch.grid, *launch.block, launch.shared_bytes], dtype=np.int32)
    longs = np.array([ops.lda, ops.ldb, ops.ldc, ops.strideA, ops.strideB, ops.strideC, A.size, B.size, C.size],
                     dtype=np.int64)
    floats = np.array([ops.alpha, ops.beta], dtype=np.float32)
    buffers = b"".join(np.ascontiguousarray(x, dtype=np.float32).tobytes() for x in (A, B, C))
    with tempfile.TemporaryDirectory(prefix="sim-run-", dir=sim_cache()) as tmp:
        work = Path(tmp)
        (work / "in.bin").write_bytes(header.tobytes() + longs.tobytes() + floats.tobytes() + buffers)
        _execute(exe, work, name, timeout)
        out = np.fromfile(work / "out.bin", dtype=np.float32)
    if out.size != C.size:
        raise SimError("crash", f"kernel {name}: the emulator wrote {out.size} floats of C, expected {C.size}")
    return out


def run(config: Config, source: str, launch: Launch, A: np.ndarray, B: np.ndarray, M: int, N: int, K: int,
        timeout: float = DEFAULT_TIMEOUT_S) -> np.ndarray:
    """Every launch of the config (run_kernel's A, B and C), in the shape verify.verify_configs expects of
    a backend: with a prologue (space.Prologue), its kernel first into a workspace, which the kernel's
    own launch is given as B."""
    ta, tb = transposes(config.values)
    pre = config.prologue(M, N, K)
    if pre is None:
        return run_kernel(source, config.name, launch, A, B, M, N, K, timeout=timeout, transposed=(ta, tb),
                          blas=takes_blas(config.values))
    A32, B32 = _operand(A, (K, M) if ta else (M, K), "A"), _operand(B, (N, K) if tb else (K, N), "B")
    W = run_flat(source, config.name + PROLOGUE_SUFFIX, pre.launch, M, N, K, A32, B32, pre.floats, timeout)
    return run_flat(source, config.name, launch, M, N, K, A32, W, M * N, timeout).reshape(M, N)


def _operand(X: np.ndarray, shape: tuple[int, int], label: str) -> np.ndarray:
    if tuple(X.shape) != shape:
        raise ValueError(f"{label} has shape {tuple(X.shape)}, expected {shape}")
    return np.ascontiguousarray(X, dtype=np.float32)


def _execute(exe: Path, work: Path, name: str, timeout: float) -> None:
    env = dict(os.environ, ASAN_OPTIONS=ASAN_OPTIONS)
    command = [str(exe), str(work / "in.bin"), str(work / "out.bin"), name]
    try:
        done = subprocess.run(command, capture_output=True, text=True, errors="replace", timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        raise SimError("timeout", f"kernel {name} did not finish within {timeout:g} s (an endless loop?)") from None
    if done.returncode != 0:
        raise failure(done.returncode, done.stderr, name)
