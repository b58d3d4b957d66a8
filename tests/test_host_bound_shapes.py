"""The committed shape files of the host-bound lattices are what scripts/host_bound_shapes.py writes: the docs'
cover commands name those files, and their rows in benchmarks/data were measured at these shapes."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("flag, name", [("", "host-bound-shapes.toml"), ("--small", "host-bound-small-shapes.toml"),
                                        ("--misaligned", "host-bound-misaligned-shapes.toml"),
                                        ("--odd-n", "host-bound-odd-n-shapes.toml")])
def test_the_committed_lattice_is_the_scripts_output(flag: str, name: str) -> None:
    args = [sys.executable, str(ROOT / "scripts" / "host_bound_shapes.py"), *([flag] if flag else [])]
    written = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    assert written == (ROOT / "benchmarks" / name).read_text()


def test_odd_n_is_the_misaligned_lattice_where_c_rows_are_misaligned() -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        from host_bound_shapes import misaligned, shapes
    finally:
        sys.path.pop(0)
    every = misaligned(shapes())
    odd = misaligned(shapes(), odd_n=True)
    assert odd == [s for s in every if s[1] % 4] and len(odd) == 2 * len(shapes())
