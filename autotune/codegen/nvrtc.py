"""NVRTC through cuda.core: CUDA source to a cubin for one architecture, cached on disk.

NVRTC needs no GPU, so this runs (and is tested) on any machine. The cache key is a hash
of the source, the architecture, the options and the NVRTC version, so a new compiler or
a changed template never reuses a stale cubin.
"""
from __future__ import annotations

import math
import os
import re
import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from autotune.codegen.render import sha256
from autotune.errors import AutotuneError, EnvironmentFault

OPTIONS_VERSION = "std=c++17;O3"  # part of the cache key: change it when the options change
# The longest one compile may take. The spaces' kernels compile in 0.1-17 s (docs/measuring.md,
# "Where a search's time goes"); one past a minute is an unrolled loop gone wrong, and a search must
# not wait minutes on it: it is recorded as a compile_error. AUTOTUNE_COMPILE_LIMIT_S overrides it.
COMPILE_LIMIT_S = 60.0


@dataclass(frozen=True)
class Compiled:
    ok: bool
    cubin: bytes
    log: str  # the NVRTC log: empty on success, the errors on failure
    arch: str
    key: str  # cache key
    timed_out: bool = False  # NVRTC passed the limit (the log says so): its thread may still be running


def compile_limit_s() -> float:
    text = os.environ.get("AUTOTUNE_COMPILE_LIMIT_S") or ""
    if not text:
        return COMPILE_LIMIT_S
    try:
        limit = float(text)
    except ValueError:
        limit = math.nan
    if not limit > 0 or math.isinf(limit):  # nan too: every compile would count as too slow, or none ever
        raise EnvironmentFault(f"AUTOTUNE_COMPILE_LIMIT_S={text!r} is not a positive number of seconds; unset it "
                               f"(default {COMPILE_LIMIT_S:g}) or set e.g. 120")
    return limit


def too_slow(limit_s: float) -> str:
    return f"NVRTC took longer than {limit_s:g} s"


class CompileError(Exception):
    def __init__(self, log: str):
        super().__init__(log)
        self.log = log


@lru_cache(maxsize=1)
def nvrtc_version() -> str:
    from cuda.bindings import nvrtc

    err, major, minor = nvrtc.nvrtcVersion()
    return f"{major}.{minor}"


def cache_root() -> Path:
    """AUTOTUNE_CACHE, else $XDG_CACHE_HOME/autotune, else ~/.cache/autotune; always absolute, as the emulator's
    compiler and the workers run in other folders. An empty or relative XDG_CACHE_HOME is ignored, as the XDG
    base directory specification says; a relative AUTOTUNE_CACHE is taken from the current folder."""
    named = os.environ.get("AUTOTUNE_CACHE")
    if named:
        return Path(os.path.abspath(named))
    xdg = os.environ.get("XDG_CACHE_HOME") or ""
    base = xdg if os.path.isabs(xdg) else os.path.expanduser("~/.cache")
    return Path(os.path.abspath(base)) / "autotune"


def cache_dir() -> Path:
    return usable_folder(cache_root() / "cubins")


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


# A template whose kernels use architecture-specific instructions (wgmma: tf32x3wg) carries this
# line; its source is then compiled for the device's architecture-specific target (sm_90 -> sm_90a),
# whose cubins run on that architecture only, and its export says so. Written once, here and in the
# template, so that no caller has to know which families need it.
ARCH_SPECIFIC = "// autotune: architecture-specific target (sm_XXa)"


def arch_specific(source: str) -> bool:
    """Whether the source needs the architecture-specific target (it carries ARCH_SPECIFIC)."""
    return ARCH_SPECIFIC in source


def arch_for(source: str, arch: str) -> str:
    """The target a source is compiled for on a device of `arch` (sm_90 -> sm_90a where it needs it)."""
    return arch + "a" if arch_specific(source) and not arch.endswith("a") else arch


ARCH_FORMAT = re.compile(r"sm_(\d+)a?")  # sm_90, or sm_90a: the architecture-specific target


@lru_cache(maxsize=1)
def supported_archs() -> tuple[int, ...]:
    """The compute capabilities this NVRTC compiles for (75, 80, ..., 120 for NVRTC 13); none where cuda-python
    is not installed (the report's reading of a database needs no compiler)."""
    try:
        from cuda.bindings import nvrtc

        _, archs = nvrtc.nvrtcGetSupportedArchs()
    except Exception:  # no cuda-python, or no NVRTC library to load: the format alone is checked
        return ()
    return tuple(archs)


def check_arch(arch: str) -> None:
    """Refuse, in one line naming the choices, an architecture NVRTC would reject with INVALID_OPTION."""
    match = ARCH_FORMAT.fullmatch(arch)
    known = supported_archs()
    if match is None or (known and int(match.group(1)) not in known):
        choices = f"one of {', '.join(f'sm_{a}' for a in known)}" if known else "a name like sm_80 or sm_90"
        raise AutotuneError(f"--arch {arch!r} is not an architecture to compile for; choose {choices} (sm_90 for "
                            f"an H100 or H200)")


def cache_key(source: str, arch: str) -> str:
    return sha256("\0".join([source, arch, OPTIONS_VERSION, nvrtc_version()]))


def compile_source(source: str, name: str, arch: str = "sm_90") -> Compiled:
    """Compile to a cubin; a compile failure is returned (ok=False, with its log), not raised.
    So is a compile past compile_limit_s(): it leaves a mark in the cache, so that no process
    (the GPU worker after a compile-ahead process) waits on that source again under that limit."""
    arch = arch_for(source, arch)
    key, limit_s = cache_key(source, arch), compile_limit_s()
    hit = cache_dir() / f"{key}.cubin"
    if hit.exists():
        return Compiled(True, hit.read_bytes(), "", arch, key)
    gave_up = hit.with_suffix(f".over{limit_s:g}s")
    if gave_up.exists():
        return Compiled(False, b"", too_slow(limit_s), arch, key, timed_out=True)
    try:
        cubin = _nvrtc_within(source, name, arch, limit_s)
    except CompileError as exc:
        return Compiled(False, b"", exc.log, arch, key)
    except TimeoutError:
        gave_up.touch()
        return Compiled(False, b"", too_slow(limit_s), arch, key, timed_out=True)
    tmp = hit.with_suffix(f".tmp{os.getpid()}")
    tmp.write_bytes(cubin)
    tmp.replace(hit)  # atomic: a concurrent reader never sees half a file
    return Compiled(True, cubin, "", arch, key)


def _nvrtc_within(source: str, name: str, arch: str, limit_s: float) -> bytes:
    """_nvrtc, or TimeoutError past limit_s. NVRTC cannot be interrupted: its thread runs on, and
    a caller that must free the core ends its process (search.pipeline's compile processes do)."""
    done: dict[str, Any] = {}

    def run() -> None:
        try:
            done["cubin"] = _nvrtc(source, name, arch)
        except Exception as exc:  # raised again in the caller's thread
            done["error"] = exc

    thread = threading.Thread(target=run, daemon=True, name=f"nvrtc {name}")
    thread.start()
    thread.join(limit_s)
    if thread.is_alive():
        raise TimeoutError(too_slow(limit_s))
    if "error" in done:
        raise done["error"]
    return done["cubin"]


def _nvrtc(source: str, name: str, arch: str) -> bytes:
    from cuda.core import Program, ProgramOptions

    options = ProgramOptions(arch=arch, std="c++17", name=f"{name}.cu")
    try:
        return bytes(Program(source, "c++", options).compile("cubin").code)
    except Exception as exc:  # NVRTCError carries the compile log in its message
        raise CompileError(str(exc)) from exc
