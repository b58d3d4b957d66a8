"""The repository's programs (benchmarks/, benchmarks/profiling/, scripts/) imported by tests: they are scripts
run from their folder, not a package, and import their neighbours by bare name, so their folder is on the path
while one is imported, and only then."""
from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def program(folder: str, name: str) -> ModuleType:
    """The module of ROOT/folder/name.py (its neighbours imported with it)."""
    sys.path.insert(0, str(ROOT / folder))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(ROOT / folder))
