"""NVRTC through cuda.core: CUDA source to a cubin for one architecture, cached on disk.

NVRTC needs no GPU, so this runs (and is tested) on any machine. The cache key is a hash
of the source, the architecture, the options and the NVRTC version, so a new compiler or
a changed template never reuses a stale cubin.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from autotune.codegen.render import sha256
from autotune.errors import EnvironmentFault

OPTIONS_VERSION = "std=c++17;O3"  # part of the cache key: change it when the options change


@dataclass(frozen=True)
class Compiled:
    ok: bool
    cubin: bytes
    log: str  # the NVRTC log: empty on success, the errors on failure
    arch: str
    key: str  # cache key


class CompileError(Exception):
    def __init__(self, log: str):
        super().__init__(log)
        self.log = log


@lru_cache(maxsize=1)
def nvrtc_version() -> str:
    from cuda.bindings import nvrtc

    err, major, minor = nvrtc.nvrtcVersion()
    return f"{major}.{minor}"


def cache_dir() -> Path:
    root = os.environ.get("AUTOTUNE_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "autotune"
    )
    return usable_folder(Path(root) / "cubins")


def usable_folder(path: Path) -> Path:
    """A cache folder, created if need be. One that cannot be made or written is the machine's
    fault, not a kernel's: it would fail every compile the same way."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise EnvironmentFault(f"cannot use the kernel cache {path}: {exc.strerror or exc}; set AUTOTUNE_CACHE "
                               f"to a writable folder") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise EnvironmentFault(f"cannot write the kernel cache {path}; set AUTOTUNE_CACHE to a writable folder")
    return path


def cache_key(source: str, arch: str) -> str:
    return sha256("\0".join([source, arch, OPTIONS_VERSION, nvrtc_version()]))


def compile_source(source: str, name: str, arch: str = "sm_90") -> Compiled:
    """Compile to a cubin; a compile failure is returned (ok=False, with its log), not raised."""
    key = cache_key(source, arch)
    hit = cache_dir() / f"{key}.cubin"
    if hit.exists():
        return Compiled(True, hit.read_bytes(), "", arch, key)
    try:
        cubin = _nvrtc(source, name, arch)
    except CompileError as exc:
        return Compiled(False, b"", exc.log, arch, key)
    tmp = hit.with_suffix(f".tmp{os.getpid()}")
    tmp.write_bytes(cubin)
    tmp.replace(hit)  # atomic: a concurrent reader never sees half a file
    return Compiled(True, cubin, "", arch, key)


def _nvrtc(source: str, name: str, arch: str) -> bytes:
    from cuda.core import Program, ProgramOptions

    options = ProgramOptions(arch=arch, std="c++17", name=f"{name}.cu")
    try:
        return bytes(Program(source, "c++", options).compile("cubin").code)
    except Exception as exc:  # NVRTCError carries the compile log in its message
        raise CompileError(str(exc)) from exc
