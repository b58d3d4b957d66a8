"""The one thing pyproject.toml cannot say for every setuptools this package builds with: the optional C
extension of api.fastcall (a call's first step without a Python frame). Where it does not compile (no C
compiler or no Python headers) the package installs without it and runs the same steps in Python;
AUTOTUNE_PURE_PYTHON=1 builds without it (a wheel for any Python: scripts/build-wheelhouse.sh)."""
import os

from setuptools import Extension, setup

pure = os.environ.get("AUTOTUNE_PURE_PYTHON") == "1"
setup(ext_modules=[] if pure else [Extension("autotune.api._fastcall", ["autotune/api/_fastcall.c"],
                                             depends=["autotune/api/_aten.h"], optional=True)])
