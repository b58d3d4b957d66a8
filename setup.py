"""What pyproject.toml cannot say for every setuptools this package builds with: its optional extensions.

- api._fastcall (C): a call's first step without a Python frame. Where it does not compile (no C compiler or
  no Python headers) the package installs without it and runs the same steps in Python.
- api._aten (C++, against libtorch): the first step's reads of torch tensors and its cuBLAS pass-through
  (at::mm), built only where torch imports at build time (`pip install --no-build-isolation`) and used only
  with that very torch (api.fastcall.attach_aten); elsewhere the first step reads the tensors through Python.

AUTOTUNE_PURE_PYTHON=1 builds neither (a wheel for any Python: scripts/build-wheelhouse.sh)."""
import os

from setuptools import Extension, setup


def aten_extensions() -> list:
    """api._aten, built against the torch this build can import; none where it imports none."""
    try:
        import torch
        from torch.utils import cpp_extension
    except ImportError:
        return []
    abi = int(getattr(torch._C, "_GLIBCXX_USE_CXX11_ABI", True))
    return [Extension("autotune.api._aten", ["autotune/api/_aten.cpp"], depends=["autotune/api/_aten.h"],
                      language="c++", optional=True,
                      include_dirs=cpp_extension.include_paths(), library_dirs=cpp_extension.library_paths(),
                      runtime_library_dirs=cpp_extension.library_paths(),
                      libraries=["c10", "torch", "torch_cpu", "torch_python"],
                      extra_compile_args=["-std=c++20", "-O2", f"-D_GLIBCXX_USE_CXX11_ABI={abi}",
                                          f'-DAUTOTUNE_TORCH_VERSION="{torch.__version__}"'])]


pure = os.environ.get("AUTOTUNE_PURE_PYTHON") == "1"
setup(ext_modules=[] if pure else [Extension("autotune.api._fastcall", ["autotune/api/_fastcall.c"],
                                             depends=["autotune/api/_aten.h"], optional=True),
                                   *aten_extensions()])
