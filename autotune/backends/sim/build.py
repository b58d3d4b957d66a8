"""Compile a rendered kernel with the host g++ into an emulator executable, cached on disk.

The kernel source is compiled unchanged (but for extern __shared__ declarations, see
dynamic_shared), with cuda_sim.h force-included, under
AddressSanitizer so that out-of-bounds accesses are reported rather than corrupting
memory. The harness (sim_main.cpp) is compiled once into an object and linked with each
kernel's object, the kernel bound to the harness's entry point by --defsym, so a new
kernel costs one small compile. Both are cached under cache_dir().parent / "sim", keyed
by a hash of everything that goes into them, and published by atomic rename.
"""
from __future__ import annotations

import os
import re
import subprocess
import tempfile
from functools import lru_cache
from importlib import resources
from pathlib import Path

from autotune.backends.sim.errors import SimError
from autotune.codegen.nvrtc import cache_dir, usable_folder
from autotune.codegen.render import sha256
from autotune.errors import EnvironmentFault

# -O1: measured on the test suite, compiles as fast as -O0 (~0.1 s a kernel) and runs a
# 256^3 tiled kernel 2.5x faster (0.06 s against 0.15 s); -O2 compiles slower for ~10%
# more speed. -g gives ASan's reports their line numbers.
FLAGS = ("-std=c++17", "-O1", "-g", "-fsanitize=address", "-fno-omit-frame-pointer", "-w")
COMPILE_TIMEOUT_S = 120.0
# Part of the cache key: change it when the way sources are rewritten or linked changes. (The harness
# is linked first so that no harness global sits right after the kernel's __shared__
# arrays, where ASan would name it instead of the array that was overrun.)
BUILD_VERSION = "4"
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# `extern __shared__ [__align__(n)] T name[];` on one line (see cuda_sim.h for why).
_DYNAMIC_SHARED = re.compile(
    r"extern[ \t]+__shared__[ \t]+(?:__align__\(\d+\)[ \t]+)?(\w+)[ \t]+(\w+)[ \t]*\[[ \t]*\][ \t]*;"
)


def compiler() -> str:
    return os.environ.get("CXX", "g++")


@lru_cache(maxsize=4)
def compiler_version(cxx: str) -> str:
    """The compiler's first --version line. A compiler that cannot run fails every kernel alike:
    the machine's fault, not a kernel's."""
    try:
        done = subprocess.run([cxx, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise EnvironmentFault(f"cannot run the host compiler {cxx!r} (CXX): {exc}; install g++ or set CXX to "
                               f"a C++ compiler") from None
    return done.stdout.splitlines()[0] if done.stdout else cxx


def support_text(filename: str) -> str:
    return resources.files("autotune.backends.sim").joinpath(filename).read_text()


def sim_cache() -> Path:
    return usable_folder(cache_dir().parent / "sim")


def _key(*parts: str) -> str:
    return sha256("\0".join((*parts, BUILD_VERSION, " ".join(FLAGS), compiler_version(compiler()))))


def build_kernel(source: str, name: str, blas: bool = False) -> Path:
    """The emulator executable for this kernel (built once; cached); blas: the kernel takes BLAS=1's
    arguments (autotune/space/blas.py), so the harness built with -DSIM_BLAS calls it. Raises
    SimError("compile")."""
    if not _NAME.match(name):
        raise SimError("compile", f"kernel name {name!r} is not a C identifier")
    header = support_text("cuda_sim.h")
    exe = sim_cache() / f"{_key(source, name, header, *_harness_sources().values(), _blas_flag(blas))}.sim"
    if exe.exists():
        return exe
    harness = _harness_object(header, blas)
    with tempfile.TemporaryDirectory(prefix="sim-build-", dir=sim_cache()) as tmp:
        work = Path(tmp)
        (work / "cuda_sim.h").write_text(header)
        kernel_cu = work / f"{name}.cu"
        kernel_cu.write_text(dynamic_shared(source))
        obj = work / f"{name}.o"
        _gxx(["-include", str(work / "cuda_sim.h"), "-x", "c++", "-c", str(kernel_cu), "-o", str(obj)], work)
        out = work / "kernel.sim"
        try:
            _gxx([str(harness), str(obj), f"-Wl,--defsym,sim_kernel={name}", "-o", str(out)], work)
        except SimError as exc:
            if "--defsym" in exc.message:
                raise SimError("compile", f'the source defines no extern "C" kernel named {name}') from None
            raise
        out.replace(exe)  # atomic: a concurrent run never sees half a file
    return exe


def dynamic_shared(source: str) -> str:
    """The one rewrite of a kernel: extern __shared__ arrays become pointers to the
    launch's dynamic shared buffer. Other text, and every line number, is untouched."""
    return _DYNAMIC_SHARED.sub(r"\1* const \2 = reinterpret_cast<\1*>(__sim_dynamic_shared);", source)


def _harness_sources() -> dict[str, str]:
    return {f: support_text(f) for f in ("sim_main.cpp", "sim_context.h")}


def _blas_flag(blas: bool) -> str:
    return "-DSIM_BLAS" if blas else ""


def _harness_object(header: str, blas: bool) -> Path:
    sources = _harness_sources()
    obj = sim_cache() / f"harness-{_key(header, *sources.values(), _blas_flag(blas))}.o"
    if obj.exists():
        return obj
    with tempfile.TemporaryDirectory(prefix="sim-build-", dir=sim_cache()) as tmp:
        work = Path(tmp)
        (work / "cuda_sim.h").write_text(header)
        for filename, text in sources.items():
            (work / filename).write_text(text)
        flags = [_blas_flag(blas)] if blas else []
        _gxx([*flags, "-I", str(work), "-c", str(work / "sim_main.cpp"), "-o", str(work / "harness.o")], work)
        (work / "harness.o").replace(obj)
    return obj


def _gxx(args: list[str], cwd: Path) -> None:
    command = [compiler(), *FLAGS, *args]
    try:
        done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S)
    except OSError as exc:  # the compiler is gone or cannot start: every kernel would fail so
        raise EnvironmentFault(f"cannot run the host compiler {compiler()!r} (CXX): {exc}; install g++ or set "
                               f"CXX to a C++ compiler") from None
    except subprocess.TimeoutExpired as exc:
        raise SimError("compile", f"{compiler()} failed to run: {exc}") from exc
    if done.returncode != 0:
        raise SimError("compile", first_error(done.stderr, cwd))


def first_error(log: str, cwd: Path) -> str:
    """The first error line of a g++ (or linker) log, without the temporary folder's path."""
    lines = [line.replace(f"{cwd}/", "") for line in log.splitlines()]
    for line in lines:
        if (" error: " in line and "ld returned" not in line) or "undefined reference" in line:
            return line.strip()
    return next((line.strip() for line in lines if line.strip()), "the host compiler failed with no message")
