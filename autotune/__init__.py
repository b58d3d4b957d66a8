"""autotune: a code-generating autotuner for FP32 SGEMM on NVIDIA GPUs.

Importing the package pulls in no GPU stack: cuda.core, cuBLAS and the driver are
loaded only by the modules that launch kernels, when they are first used.

The Python API (autotune.api.python), loaded on first use: `autotune.tune(M, N, K, ...)` runs
a search (`autotune.search` is the search layer's package, hence the other name),
`autotune.best(M, N, K)` reads the best row, `autotune.load()` returns the matmul; bad input raises
`autotune.AutotuneError` (one line: what was wrong, how to fix it), a machine with no GPU its subclass
`autotune.NoDeviceError`. `autotune.torch` (the
PyTorch op and `autotune.torch.Linear`) loads torch on first use, as `import autotune.torch` does.
"""
from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"
_API = {"tune": "tune", "best": "best", "load": "load", "report": "report"}  # the package's name -> api.python's
_SUBMODULES = ("torch",)  # reached as attributes without an import of their own (they load their dependencies)
_ERRORS = ("AutotuneError", "NoDeviceError")  # what the API raises, to catch: `except autotune.AutotuneError`


def __getattr__(name: str) -> Any:
    # importlib, not an import statement: the package root stays below every layer
    # (tests/test_layout.py), and the API's modules load only when one of its names is asked for.
    if name in _API:
        return getattr(importlib.import_module("autotune.api.python"), _API[name])
    if name in _SUBMODULES:
        return importlib.import_module(f"autotune.{name}")
    if name in _ERRORS:
        return getattr(importlib.import_module("autotune.errors"), name)
    raise AttributeError(f"module 'autotune' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_API, *_SUBMODULES, *_ERRORS])
