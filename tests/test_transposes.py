"""TA and TB: the register-blocked kernels (and splitk and tailsplit, the same template) reading A
and B stored transposed, each layout checked on the emulator against A @ B."""
from __future__ import annotations

import numpy as np
import pytest

from autotune.backends.reference import stored
from autotune.backends.sim import run
from autotune.backends.verify import check
from autotune.codegen.render import render
from autotune.errors import AutotuneError
from autotune.families import FAMILIES
from autotune.space import Config, make_config, violations

# Odd shapes run the guarded scalar loads; in 36 x 40 x 24 the first tile is whole (the unguarded
# float4 loads and 16-byte cp.async copies) and the others are edge tiles (guarded float4 loads).
SHAPES = ((17, 33, 9), (36, 40, 24))
SMALL = {"BM": 32, "BN": 32, "BK": 8, "WM": 16, "WN": 32, "WNITER": 1, "TM": 2, "TN": 4}
# VT=1 (transposes in registers): 4 float4 loads of each operand per thread, stored as float4 (R = 4),
# and 2 per thread, stored as float2 (R = 2). TN has nothing to transpose, so no VT=1 kernel.
VT4 = {"BM": 32, "BN": 32, "BK": 16, "WM": 32, "WN": 32, "WNITER": 1, "TM": 8, "TN": 4, "STAGES": 1, "ASYNC": 0, "VT": 1}
VT2 = {**SMALL, "BK": 16, "STAGES": 2, "ASYNC": 0, "VT": 1}
CASES = (
    ("blocked", {**SMALL, "STAGES": 2, "ASYNC": 0, "BSWAP": 1}),  # register prefetch, B's columns swapped
    ("blocked", {**SMALL, "STAGES": 3, "ASYNC": 1}),  # cp.async
    ("splitk", {**SMALL, "STAGES": 2, "ASYNC": 0, "SPLITK": 2}),  # chunks of K: the pointers offset by kBegin
    ("blocked", {**VT4, "BSWAP": 1}),  # B's swapped column pairs inside the float4 stores
    ("splitk", {**VT2, "SPLITK": 2}),
)
LAYOUTS = {"NN": (0, 0), "NT": (0, 1), "TN": (1, 0), "TT": (1, 1)}


def config(family: str, params: dict, layout: str) -> Config:
    ta, tb = LAYOUTS[layout]
    c = make_config(FAMILIES[family], {**params, "TA": ta, "TB": tb})
    assert not violations(c)
    return c


def statuses(c: Config, source: str, shapes=SHAPES) -> list[str]:
    runner = lambda cfg, _src, *rest: run(cfg, source, *rest)  # noqa: E731  (maybe a broken source)
    return [check(c, source, shape, runner, seed=2).status for shape in shapes]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_every_layout_matches_the_reference(layout):
    for family, params in CASES:
        if params.get("VT") and layout == "TN":
            continue
        c = config(family, params, layout)
        assert statuses(c, render(c)) == ["ok"] * len(SHAPES), c.name


def test_a_kernel_gets_its_layouts_operands():
    X = np.arange(6, dtype=np.float32).reshape(2, 3)
    A, B = stored(X, X, {"TA": 1})  # TB absent: an old row, untransposed
    assert A.shape == (3, 2) and A.flags.c_contiguous and A[2, 1] == X[1, 2] and B is X


def test_a_kernel_that_ignores_the_layout_is_wrong():
    # The NN kernel handed NT operands: the check knows the layout, so this cannot pass.
    nt = config("blocked", CASES[0][1], "NT")
    nn_source = render(config("blocked", CASES[0][1], "NN")).replace(
        config("blocked", CASES[0][1], "NN").name, nt.name)
    assert statuses(nt, nn_source, SHAPES[:1]) == ["wrong"]


@pytest.mark.parametrize("old, new", [
    # TA=1's guarded loads reading A at its untransposed index A[m * K + k]
    ("ra[i] = load4(A, k0 + r, row0 + c, K, M, vecA);", "ra[i] = load4(A, row0 + c, k0 + r, M, K, vecA);"),
    # TB=1's shared-memory store untransposed (Bs[n][k] instead of Bs[k][n])
    ("Bs[(c + 0) * LDB + n] = rb[i].x;", "Bs[n * BK + c] = rb[i].x;"),
    # TB=1's padded row length (LDB = BN + pad) ignored by the store: it must disagree with the reads
    ("Bs[(c + 0) * LDB + n] = rb[i].x;", "Bs[(c + 0) * BN + n] = rb[i].x;"),
])
def test_an_untransposed_index_is_wrong(old, new):
    c = config("blocked", CASES[0][1], "TT")
    source = render(c)
    assert old in source, "the template changed?"
    assert statuses(c, source.replace(old, new), SHAPES[:1]) == ["wrong"]


@pytest.mark.parametrize("old, new, shape", [
    # a wrong lane of the register transpose: two stored rows of A exchanged in the float4 stores
    ("make_float4(ra[i * 4 + 0].x, ra[i * 4 + 1].x,", "make_float4(ra[i * 4 + 1].x, ra[i * 4 + 0].x,", SHAPES[0]),
    # B's column pairs (BSWAP) left unswapped by the transposing stores, while the reads un-swap them
    ("make_float4(rb[i * 4 + 1].y, rb[i * 4 + 0].y,", "make_float4(rb[i * 4 + 0].y, rb[i * 4 + 1].y,", SHAPES[0]),
    # the guarded loads reading the group's first row R times
    ("load4(A, row0 + r + j,", "load4(A, row0 + r,", SHAPES[0]),
    # the interior loads (the first tile of 36 x 40 x 24) reading the group's first row R times
    ("gA + i * strideA + j * K)", "gA + i * strideA + 0 * K)", SHAPES[1]),
])
def test_a_wrong_register_transpose_is_wrong(old, new, shape):
    c = config("blocked", {**VT4, "BSWAP": 1}, "NT")
    source = render(c)
    assert old in source, "the template changed?"
    assert statuses(c, source.replace(old, new), (shape,)) == ["wrong"]


def test_vt_is_refused_where_it_has_nothing_to_do_or_cannot_tile():
    def reasons(layout: str, **params) -> str:
        ta, tb = LAYOUTS[layout]
        return " | ".join(violations(make_config(FAMILIES["blocked"], {**params, "TA": ta, "TB": tb})))

    assert not reasons("NN", **VT2) and not reasons("NT", **VT4) and not reasons("TT", **VT4)
    assert "VT=1 needs an operand" in reasons("TN", **VT4)
    assert "VT=1 transposes the register-prefetch loads" in reasons("NN", **{**VT4, "ASYNC": 1, "STAGES": 2})
    assert "even number of float4 loads" in reasons("NN", **{**VT2, "BK": 8})  # LA = 1
    # 32 threads, BK = 32: a thread's 8 loads of A as 2 groups of 4 rows, but a warp spans only 4 of the 8 k-chunks
    assert "whole rows apart" in reasons("NN", **{**VT4, "BK": 32})


def test_vt_0_kernels_keep_their_names_and_sources():
    nn = config("blocked", CASES[0][1], "NN")
    assert nn.values["VT"] == 0 and "VT" not in nn.name and "xrow" not in render(nn)
    vt = config("blocked", {**CASES[0][1], "BK": 16, "VT": 1}, "NT")
    assert vt.name.endswith("_VT1_TB1") and "xrow" in render(vt)


def test_the_names_show_a_transpose_only_when_there_is_one():
    nn, nt, tn = (config("blocked", CASES[0][1], layout) for layout in ("NN", "NT", "TN"))
    assert "TA" not in nn.name and "TB" not in nn.name
    assert nt.name == nn.name + "_TB1" and tn.name == nn.name + "_TA1"
    assert "TA=1" in render(tn) and "TA=" not in render(nn)



def test_the_search_backend_measures_each_layout_against_a_times_b():
    from autotune.backends.outcome import OK, WRONG
    from autotune.backends.sim.backend import SimBackend

    backend = SimBackend(*SHAPES[0])
    nn, tn = (config("blocked", CASES[0][1], layout) for layout in ("NN", "TN"))
    assert backend.measure(tn, render(tn)).status == OK
    assert backend.measure(tn, render(nn).replace(nn.name, tn.name)).status == WRONG


@pytest.mark.gpu
@pytest.mark.parametrize("layout", LAYOUTS)
def test_every_layout_verifies_against_cublas_on_the_gpu(layout):
    from autotune.backends.cuda.backend import CudaBackend

    backend = CudaBackend(1031, 517, 263, seed=7)  # odd: every guard; and the odd-shape check problem
    for family, params in (("blocked", {}), ("blocked", {"ASYNC": 1, "STAGES": 3, "BSWAP": 0}), ("splitk", {})):
        c = config(family, params, layout)
        outcome = backend.measure(c, render(c))
        assert outcome.status == "ok", f"{c.name}: {outcome.reason}"


def test_a_search_of_a_layout_keeps_only_the_families_that_have_it():
    from autotune.cli.options import narrow_families, with_layout

    every = list(FAMILIES.values())
    nt = narrow_families(every, with_layout((), "NT"))
    assert {f.name for f in nt} == {"blocked", "splitk", "tailsplit"}
    assert all(f.param("TA").values == (0,) and f.param("TB").values == (1,) for f in nt)
    assert len(narrow_families(every, with_layout((), "NN"))) == len(every)  # every family computes NN
    assert with_layout(("BM=64",), "TN") == ("BM=64", "TA=1", "TB=0")


def test_the_python_api_searches_one_layout_like_the_cli():
    from autotune.api.python import families_of, with_layout

    nt = with_layout(families_of("blocked,naive"), "NT")
    assert [f.name for f in nt] == ["blocked"] and nt[0].param("TB").values == (1,)
    assert with_layout(families_of("naive"), None)[0].name == "naive"
    with pytest.raises(AutotuneError, match="unknown layout 'XN'; one of NN, NT, TN, TT"):
        with_layout(families_of("blocked"), "XN")
