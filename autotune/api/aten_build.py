"""api._aten (load()'s first step's reads of torch tensors and its cuBLAS pass-through, in C++ against libtorch),
built on first use for the torch at hand, as Triton builds its launchers: a pip install cannot build it, since
pip builds the package apart from the user's torch, and C++ against libtorch must match that very torch.

The first call of a process that plans a torch call (api.fastcall.attach_aten) starts the build in a thread,
the host compiler (CXX, else g++) in a subprocess, about 10-15 s of one core, while the calls go on through the
C first step's Python reads; once built, the C first step takes the steps. The module is cached under
cache_root()/aten, keyed by its sources, torch's version, Python's ABI and the compiler, and published by
atomic rename, so later processes load it at once. A build that fails leaves its reason there (failed.txt)
and is not tried again for that key: the first step runs as it did. AUTOTUNE_ATEN=0 skips all of this.
"""
from __future__ import annotations

import functools
import importlib.util
import os
import subprocess
import sys
import sysconfig
import tempfile
import threading
from importlib import resources
from pathlib import Path
from typing import Any, Callable

from autotune.backends.sim.build import compiler
from autotune.codegen.nvrtc import cache_root
from autotune.codegen.render import sha256

SOURCES = ("_aten.cpp", "_aten.h")
BUILD_TIMEOUT_S = 300.0
_lock = threading.Lock()
_started: set[str] = set()  # keys whose build this process started


def source_dir() -> Path:
    return Path(str(resources.files("autotune.api")))


@functools.cache
def sources_digest() -> str:
    """The sources' hash, read once a process: they do not change under it, and a first call asks twice."""
    return sha256(b"\0".join((source_dir() / name).read_bytes() for name in SOURCES))


def folder(torch: Any) -> Path:
    """Where the module built for this torch, Python and compiler lives."""
    parts = [sources_digest(), torch.__version__, sys.version, compiler()]
    key = sha256("\0".join(parts).encode())
    return cache_root() / "aten" / key[:16]


def target(torch: Any) -> Path:
    return folder(torch) / f"_aten{sysconfig.get_config_var('EXT_SUFFIX')}"


def command(torch: Any, out: Path) -> list[str]:
    """The compiler's command line: C++20 (torch 2.13's headers need it), torch's C++ ABI, its headers and libraries
    (found again at run time through the rpath), and the version the module will only be taken with."""
    from torch.utils import cpp_extension

    abi = int(getattr(torch._C, "_GLIBCXX_USE_CXX11_ABI", True))
    includes = [*cpp_extension.include_paths(), sysconfig.get_paths()["include"]]
    libraries = cpp_extension.library_paths()
    return [compiler(), "-std=c++20", "-O2", "-shared", "-fPIC", "-w", f"-D_GLIBCXX_USE_CXX11_ABI={abi}",
            f'-DAUTOTUNE_TORCH_VERSION="{torch.__version__}"', *(f"-I{p}" for p in includes),
            str(source_dir() / "_aten.cpp"), "-o", str(out), *(f"-L{p}" for p in libraries),
            *(f"-Wl,-rpath,{p}" for p in libraries), "-lc10", "-ltorch", "-ltorch_cpu", "-ltorch_python"]


def build(torch: Any) -> str:
    """Compile into the cache (atomic rename); '' once built, else why not (also written to failed.txt)."""
    where, done = folder(torch), target(torch)
    try:
        where.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=where) as tmp:
            out = Path(tmp) / done.name
            run = subprocess.run(command(torch, out), capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
            if run.returncode == 0:
                os.replace(out, done)
                return ""
            why = f"{compiler()} exited {run.returncode}: {(run.stderr or run.stdout).strip()[-2000:]}"
    except (OSError, subprocess.TimeoutExpired) as exc:
        why = f"{type(exc).__name__}: {exc}"
    try:
        (where / "failed.txt").write_text(why + "\n")
    except OSError:
        pass
    return why


def load(path: Path) -> Any:
    """The built module, loaded from its file; None where it does not load (a torch changed in place)."""
    spec = importlib.util.spec_from_file_location("autotune.api._aten", path)
    if spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except ImportError:
        return None
    return module


def steps(torch: Any) -> Any:
    """The capsule of the module built for this torch, or None: not built (yet), or AUTOTUNE_ATEN=0."""
    if os.environ.get("AUTOTUNE_ATEN") == "0":
        return None
    path = target(torch)
    module = load(path) if path.exists() else None
    return module.steps if module is not None and module.TORCH_VERSION == torch.__version__ else None


def when_built(torch: Any, then: Callable[[Any], None], wait: bool = False) -> None:
    """then(capsule) once the module for this torch is built (now, where it is cached); a build started in a
    thread where it is not and none failed for this key or runs in this process (wait: in this thread)."""
    if os.environ.get("AUTOTUNE_ATEN") == "0":
        return
    ready = steps(torch)
    if ready is not None:
        then(ready)
        return
    where = folder(torch)
    with _lock:
        if (where / "failed.txt").exists() or str(where) in _started:
            return
        _started.add(str(where))

    def run() -> None:
        if not build(torch) and (built := steps(torch)) is not None:
            then(built)

    if wait:
        run()
    else:
        threading.Thread(target=run, name="autotune-aten-build", daemon=True).start()


def main() -> int:
    """python -m autotune.api.aten_build: build api._aten for the torch at hand now (a first use would, in a
    thread), and say where it is or why not, in one line."""
    try:
        import torch
    except ImportError:
        print("api._aten is built against torch, which does not import here: pip install torch", file=sys.stderr)
        return 2

    if steps(torch) is not None:
        print(f"api._aten for torch {torch.__version__}: {target(torch)}")
        return 0
    why = build(torch) or ("" if steps(torch) is not None else "built, but it does not load with this torch")
    print(f"api._aten for torch {torch.__version__}: {why or target(torch)}")
    return 1 if why else 0


if __name__ == "__main__":
    sys.exit(main())
