"""AL=1: a register-blocked NN kernel whose A and B are first copied by a second kernel of the same
module (its prologue, space.Prologue) into a workspace with their rows padded to multiples of 4 floats,
so that the product's loads are 16-byte ones whatever K and N (4097 x 4095 x 4093's rows are not
16-byte aligned). AL=2: padded to whole tiles, rows and columns, so that no block loads at an edge. Checked without a GPU: on the emulator at odd shapes, mutations of the prologue and
of the kernel's strides that must fail, the constraint, and the launchers' formulas."""
from __future__ import annotations

import pytest

from autotune.codegen.launcher import launchers
from autotune.codegen.render import render
from autotune.families import FAMILIES
from autotune.families.blocked import ALIGN_THREADS
from autotune.families.layouts import for_batch
from autotune.space import ceil_div, make_config, violations
from autotune.space.formula import derive_prologue
from tests.emulated import edit
from tests.names import tags
from tests.test_launchers import load_module
from tests.test_transposes import SMALL, statuses

BLOCKED = FAMILIES["blocked"]
# K and N not multiples of 4 (padded rows), a row, a column, a K of 1, several tiles both ways, and
# multiples of 4 (no padding at all).
SHAPES = ((17, 33, 9), (1, 70, 130), (45, 1, 66), (20, 19, 1), (131, 67, 93), (64, 68, 132))
CASES = {
    "default tiling": {},
    "small tiling": {**SMALL, "STAGES": 2, "ASYNC": 0},
    "small cp.async": {**SMALL, "STAGES": 3, "ASYNC": 1, "BSWAP": 0},
}


def al(params: dict, level: int = 1):
    c = make_config(BLOCKED, {**params, "AL": level})
    assert not violations(c) and c.has_prologue
    return c


@pytest.mark.parametrize("level", (1, 2))
@pytest.mark.parametrize("case", CASES)
def test_copying_into_aligned_rows_first_matches_the_reference(case, level):
    c = al(CASES[case], level)
    assert statuses(c, render(c), SHAPES) == ["ok"] * len(SHAPES), c.name


@pytest.mark.parametrize("old, new", [
    # the padding read past the row's end (the next row's first floats; past A's last row, out of bounds)
    ("v[j] = c + j < cols ? row[c + j] : 0.0f;", "v[j] = row[c + j];"),
    # the float4s that hold padding left unwritten: the emulator's workspace starts as NaN
    ("reinterpret_cast<float4*>(W)[q] =", "if (c + 3 < cols) reinterpret_cast<float4*>(W)[q] ="),
    # A's rows read with their stored length, not the padded one
    ("A = B + static_cast<size_t>(K) * Np;", "A = B + static_cast<size_t>(K) * N;"),
])
def test_a_wrong_copy_is_wrong(old, new):
    c = al(CASES["small tiling"])
    assert statuses(c, edit(render(c), old, new), ((17, 33, 9), (131, 67, 93))) != ["ok", "ok"]


@pytest.mark.parametrize("old, new", [
    # B's rows past K and A's past M copied from past the operands' ends instead of written as zeros
    ("const int cols = r < (ofB ? K : M) ? (ofB ? N : K) : 0;", "const int cols = ofB ? N : K;"),
    # A read where B's rows end unpadded: the kernel's A starts K rows into the workspace, not Kp
    ("A = B + static_cast<size_t>(Kp) * Np;", "A = B + static_cast<size_t>(K) * Np;"),
    # A's rows written into W at B's row length
    ("static_cast<size_t>(r) * width + c", "static_cast<size_t>(r) * Np + c"),
    # the kernel's loads bounded by the padded rows of B but a stored row length of A
    ("const int Kp = (K + BK - 1) / BK * BK, Np", "const int Kp = (K + 3) / 4 * 4, Np"),
])
def test_a_wrong_copy_to_whole_tiles_is_wrong(old, new):
    c = al(CASES["small tiling"], 2)
    assert statuses(c, edit(render(c), old, new), ((17, 33, 9), (131, 67, 93))) != ["ok", "ok"]


def test_al_needs_nn_operands_and_the_plain_signature():
    for params in ({"TA": 1}, {"TB": 1, "PB": 0}, {"BLAS": 1}):
        assert any("AL=1" in v for v in violations(make_config(BLOCKED, {**params, "AL": 1}))), params
    # a copy of all of A and B beside a product split along K: not offered; the tail split splits a wave's
    # worth of tiles at most, and copies to whole tiles only (AL=2 was faster than AL=1 wherever measured)
    assert FAMILIES["splitk"].param("AL").values == (0,) and FAMILIES["tailsplit"].param("AL").values == (0, 2)
    assert any("AL=1 or 2 needs TA=0" in v for v in violations(make_config(FAMILIES["tailsplit"], {"TA": 1, "AL": 2})))
    assert make_config(BLOCKED, {}).values["AL"] == 0 and not any(t.startswith("AL") for t in tags(make_config(BLOCKED, {}).name))
    (batched,) = for_batch([BLOCKED], 4)  # a batch's BLAS=1 kernels take the operands as stored
    assert batched.param("AL").values == (0,) and batched.param("BLAS").values == (1,)


@pytest.mark.parametrize("level", (1, 2))
def test_the_prologue_writes_both_padded_operands_on_a_one_dimensional_grid(tmp_path, level):
    c = al({}, level)
    formula = derive_prologue(c)
    for M, N, K in ((1, 1, 1), (5, 64, 65), (4097, 4095, 4093), (3, 1, 2**20 + 1)):
        pre = c.prologue(M, N, K)
        if level == 1:  # B as K x Np, A as M x Kp, rows a multiple of 4 long; a thread a float4 of W, in order
            floats = K * ceil_div(N, 4) * 4 + M * ceil_div(K, 4) * 4
            blocks = ceil_div(floats // 4, ALIGN_THREADS)
        else:  # B as Kp x Np, A as Mp x Kp, whole tiles; each row of W a run of blocks of 256 float4s
            kp, (bm, bn) = ceil_div(K, c.values["BK"]) * c.values["BK"], (c.values["BM"], c.values["BN"])
            np_, mp = ceil_div(N, bn) * bn, ceil_div(M, bm) * bm
            floats = kp * np_ + mp * kp
            blocks = kp * ceil_div(np_ // 4, ALIGN_THREADS) + mp * ceil_div(kp // 4, ALIGN_THREADS)
        assert pre.floats == floats and pre.launch.block == (ALIGN_THREADS, 1, 1)
        assert pre.launch.grid == (blocks, 1, 1)
        assert formula.evaluate(M, N, K) == (pre.launch.grid[0], pre.floats)  # what the launchers compute
    made = launchers(c, c.name, c.geometry(96, 80), (96, 80, 40), None, tmp_path / "best.cu")
    (tmp_path / "best.py").write_text(made.python)
    module = load_module(tmp_path / "best.py")
    assert module.workspace_bytes(4097, 4095, 4093) == 4 * c.prologue(4097, 4095, 4093).floats


@pytest.mark.parametrize("shape, given, want", [
    ((4097, 4095, 4093), {}, 2), ((1024, 4096, 4093), {}, 2), ((1024, 4095, 4096), {}, 2),
    ((4096, 4096, 4096), {}, 0),  # aligned rows: nothing to copy
    ((1023, 4095, 4093), {}, 0),  # below AL_MIN_ROWS
    ((4097, 4095, 4093), {"TB": 1}, 0),  # not NN: AL=1 is refused there
    ((4097, 4095, 4093), {"BLAS": 1}, 0),
])
def test_the_default_copies_to_whole_tiles_where_rows_are_misaligned_and_m_is_large(shape, given, want):
    from autotune.space import Limits, fitted

    config = fitted(make_config(BLOCKED, given), shape, Limits(), given)
    assert config.values.get("AL", 0) == want
    assert not violations(config)
