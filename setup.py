"""The one thing pyproject.toml cannot say for every setuptools this package builds with: the optional C
extension of api.fastcall (a call's short way without a Python frame). Where it does not compile (no C
compiler or no Python headers) the package installs without it and runs the same steps in Python."""
from setuptools import Extension, setup

setup(ext_modules=[Extension("autotune.api._fastcall", ["autotune/api/_fastcall.c"], optional=True)])
