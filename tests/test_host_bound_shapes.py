"""The committed shape files of the host-bound lattices are what scripts/host_bound_shapes.py writes: the docs'
cover commands name those files, and their rows in benchmarks/data were measured at these shapes."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.programs import program

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("flag, name", [("", "host-bound-shapes.toml"), ("--small", "host-bound-small-shapes.toml"),
                                        ("--misaligned", "host-bound-misaligned-shapes.toml"),
                                        ("--odd-n", "host-bound-odd-n-shapes.toml"),
                                        ("--long-k", "host-bound-long-k-shapes.toml"),
                                        ("--tall", "host-bound-tall-shapes.toml"),
                                        ("--wide", "host-bound-wide-shapes.toml"),
                                        ("--shallow", "host-bound-shallow-shapes.toml")])
def test_the_committed_lattice_is_the_scripts_output(flag: str, name: str) -> None:
    args = [sys.executable, str(ROOT / "scripts" / "host_bound_shapes.py"), *([flag] if flag else [])]
    written = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    assert written == (ROOT / "benchmarks" / name).read_text()


@pytest.mark.parametrize("args", [["--wid"], ["--tall", "--wide"]])
def test_a_flag_it_does_not_know_or_two_flags_are_one_line_and_exit_2(args: list[str]) -> None:
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "host_bound_shapes.py"), *args], capture_output=True,
                          text=True)
    assert done.returncode == 2 and done.stdout == "" and len(done.stderr.splitlines()) == 1
    assert "give at most one of --misaligned" in done.stderr


def test_odd_n_is_the_misaligned_lattice_where_c_rows_are_misaligned() -> None:
    lattice = program("scripts", "host_bound_shapes")
    misaligned, shapes = lattice.misaligned, lattice.shapes
    every = misaligned(shapes())
    odd = misaligned(shapes(), odd_n=True)
    assert odd == [s for s in every if s[1] % 4] and len(odd) == 2 * len(shapes())


def test_long_k_corners_are_smaller_lattices_where_k_is_long_aligned_and_not() -> None:
    lattice = program("scripts", "host_bound_shapes")
    long_k = lattice.written("--long-k")
    assert len(long_k) == len(set(long_k)) and all(s[2] >= 255 for s in long_k)
    assert {(s[1] % 4 == 0, s[2] % 4 == 0) for s in long_k} == {(True, True), (True, False), (False, True), (False, False)}
    assert all(lattice.estimate_us(*s) <= 5.0 for s in long_k)
    # among them the corner where splitk's small tiles took 9.3 us on an H100, and its aligned twin
    assert (1024, 64, 511) in long_k and (1024, 64, 512) in long_k


def test_tall_corners_are_few_columns_and_many_rows_aligned_and_not() -> None:
    lattice = program("scripts", "host_bound_shapes")
    tall = lattice.written("--tall")
    assert len(tall) == len(set(tall)) == 40 and all(s[1] <= 16 and s[0] >= 1024 for s in tall)
    assert {(s[1] % 4 == 0, s[2] % 4 == 0) for s in tall} == {(True, True), (True, False), (False, True), (False, False)}
    assert all(lattice.estimate_us(*s) <= 7.5 for s in tall)
    # the corner where tall's small tiles took 10.3 us on an H100, and its misaligned twin (12.4 us with 4-byte loads)
    assert (16384, 16, 256) in tall and (16384, 15, 255) in tall


def test_wide_corners_are_few_rows_and_many_columns_a_lattice_for_each_count_of_rows() -> None:
    lattice = program("scripts", "host_bound_shapes")
    wide = lattice.written("--wide")
    assert len(wide) == len(set(wide)) == 72 and all(s[0] in (8, 16) and s[1] >= 1023 for s in wide)
    assert {(s[1] % 4 == 0, s[2] % 4 == 0) for s in wide} == {(True, True), (True, False), (False, True), (False, False)}
    assert all(lattice.estimate_us(*s) <= 10.0 for s in wide)
    # 16 rows would hold 8 rows' corners, yet each count of rows keeps its own: the same 40 corners at 8 and at 16
    assert sorted(s[1:] for s in wide if s[0] == 8) == sorted(s[1:] for s in wide if s[0] == 16)
    # corners that hold the host-bound calls of few rows that ran cuBLAS on the H200 (anyshape seeds 2 and 3)
    for call in [(1, 6634, 672), (8, 3144, 591)]:
        assert any(all(a >= b for a, b in zip(s, call)) and s[1] % 4 and s[2] % 4 for s in wide), call


def test_shallow_corners_are_short_k_and_c_of_millions_of_floats_aligned_and_not() -> None:
    lattice = program("scripts", "host_bound_shapes")
    shallow = lattice.written("--shallow")
    assert len(shallow) == len(set(shallow)) and {s[2] for s in shallow} == {7, 8, 31, 32, 63, 64}
    assert all(s[0] >= 127 and s[1] >= 127 for s in shallow)
    assert {(s[1] % 4 == 0, s[2] % 4 == 0) for s in shallow} == {(True, True), (True, False), (False, True), (False, False)}
    assert all(lattice.estimate_us(*s) <= 10.0 for s in shallow)
    # corners that hold short-K calls that ran cuBLAS below 0.95x torch.matmul on the H200 (anyshape seed 7), read alike
    from autotune.api.dispatch import holds_alike

    for call in [(4828, 618, 4), (2727, 1193, 3), (8139, 213, 6), (593, 375, 6)]:
        assert any(holds_alike(s, call) for s in shallow), call


def test_the_small_lattice_holds_what_its_docstring_says() -> None:
    """--small's docstring: of the 30 host-bound random shapes of anyshape's three seeds (torch.matmul under 17 us),
    its corners hold 14 aligned alike, while the shipped database's covering rows (api.dispatch.covers, beating
    cuBLAS) hold 14, its own corners shipped among them (2 before them, 8 before the long-K, tall and wide corners)."""
    import json
    import sqlite3

    from autotune.api.dispatch import beats_library, covers, holds_alike

    written = program("scripts", "host_bound_shapes").written
    shapes = []
    for name in ("anyshape-h200.json", "anyshape-seed2-h200.json", "anyshape-seed3-h200.json"):
        data = json.loads((ROOT / "benchmarks" / "data" / name).read_text())
        shapes += [(s["M"], s["N"], s["K"]) for s in data["shapes"] if s["kind"] == "random" and s["torch_ms"] < 0.017]
    corners = written("--small")
    held = [s for s in shapes if any(holds_alike(corner, s) for corner in corners)]
    db = sqlite3.connect(ROOT / "autotune" / "store" / "tuned" / "h200.sqlite")
    db.row_factory = sqlite3.Row
    rows = [dict(r) for r in db.execute("SELECT * FROM results WHERE status = 'ok'")]
    plain = [r for r in rows if not (r.get("TA") or r.get("TB") or r.get("BLAS"))]
    covered = [s for s in shapes if any(covers(r, s) and beats_library(r) for r in plain)]
    assert (len(shapes), len(held), len(covered)) == (30, 14, 14)
