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
from tests.emulated import edit
from tests.names import tags

# Odd shapes run the guarded scalar loads; in 36 x 40 x 24 the first tile is whole (the unguarded
# float4 loads and 16-byte cp.async copies) and the others are edge tiles (guarded float4 loads).
SHAPES = ((17, 33, 9), (36, 40, 24))
SMALL = {"BM": 32, "BN": 32, "BK": 8, "WM": 16, "WN": 32, "WNITER": 1, "TM": 2, "TN": 4}
CASES = (
    ("blocked", {**SMALL, "STAGES": 2, "ASYNC": 0, "BSWAP": 1}),  # register prefetch, B's columns swapped
    ("blocked", {**SMALL, "STAGES": 3, "ASYNC": 1}),  # cp.async
    ("splitk", {**SMALL, "STAGES": 2, "ASYNC": 0, "SPLITK": 2}),  # chunks of K: the pointers offset by kBegin
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
        c = config(family, params, layout)
        assert statuses(c, render(c)) == ["ok"] * len(SHAPES), c.name


def test_a_kernel_gets_its_layouts_operands():
    X = np.arange(6, dtype=np.float32).reshape(2, 3)
    A, B = stored(X, X, {"TA": 1})  # TB absent: an old row, untransposed
    assert A.shape == (3, 2) and A.flags.c_contiguous and A[2, 1] == X[1, 2] and B is X


def test_a_kernel_that_ignores_the_layout_is_wrong():
    # The NN kernel handed NT operands: the check knows the layout, so this cannot pass.
    nt = config("blocked", {**CASES[0][1], "PB": 0}, "NT")
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
    c = config("blocked", {**CASES[0][1], "PB": 0}, "TT")
    assert statuses(c, edit(render(c), old, new), SHAPES[:1]) == ["wrong"]


def test_the_names_show_a_transpose_only_when_there_is_one():
    nn, nt, tn = (config("blocked", {**CASES[0][1], "PB": 0}, layout) for layout in ("NN", "NT", "TN"))
    assert "TA" not in nn.name and "TB" not in nn.name and "PB" not in nn.name
    assert tags(nt.name) == tags(nn.name) | {"TB1"} and tags(tn.name) == tags(nn.name) | {"TA1"}
    assert tags(config("blocked", CASES[0][1], "NT").name) == tags(nn.name) | {"TB1", "PB1"}  # B transposed first
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
    assert {f.name for f in nt} == {"blocked", "splitk", "tailsplit", "streamk"}
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


def test_a_search_is_of_nn_unless_a_layout_or_transposes_are_asked_for():
    from autotune.cli.options import narrow_families, with_layout

    blocked = [FAMILIES["blocked"]]
    [plain] = narrow_families(blocked, ())
    assert plain.param("TA").values == (0,) and plain.param("TB").values == (0,)
    [nt] = narrow_families(blocked, with_layout((), "NT"))
    assert nt.param("TB").values == (1,)
    [both] = narrow_families(blocked, ("TA=0,1",))
    assert both.param("TA").values == (0, 1) and both.param("TB").values == (0,)


# RT=1: loads of an operand stored along K in groups of rows (2 of A, 4 of B), stored into shared
# memory as float2s / float4s. A tile whose threads hold 2 loads of A and 4 of B.
RT = {"BM": 64, "BN": 128, "BK": 16, "WM": 32, "WN": 64, "WNITER": 2, "TM": 4, "TN": 4, "STAGES": 2, "ASYNC": 0,
      "RT": 1, "PB": 0}
# 130 x 260 x 40: edge tiles in every direction and a partial last K step (the guarded loads).
RT_SHAPES = (*SHAPES, (130, 260, 40))


@pytest.mark.parametrize("layout", ["NN", "NT", "TT"])
@pytest.mark.parametrize("family, extra", [("blocked", {}), ("blocked", {"BLAS": 1}),
                                           ("blocked", {"STAGES": 1, "BSWAP": 0}), ("splitk", {"SPLITK": 2})])
def test_regrouped_loads_match_the_reference(layout, family, extra):
    c = config(family, {**RT, **extra}, layout)
    assert statuses(c, render(c), RT_SHAPES) == ["ok"] * len(RT_SHAPES), c.name


@pytest.mark.parametrize("old, new", [
    # B's four rows stored in the wrong order within the float4 (the BSWAP pair swap dropped)
    ("make_float4(rb[4 * h + 1].x, rb[4 * h].x,", "make_float4(rb[4 * h].x, rb[4 * h + 1].x,"),
    # a guarded load of B from the row of the group's first load, not its own
    ("r = u / (BK / 4) * 4 + i % 4,", "r = u / (BK / 4) * 4,"),
    # A's pair stored at the wrong k
    ("&As[(c + 1) * LDA + m]", "&As[(c + 2) * LDA + m]"),
])
def test_a_regrouped_store_out_of_place_is_wrong(old, new):
    c = config("blocked", RT, "NT")
    assert statuses(c, edit(render(c), old, new), ((130, 260, 40),)) == ["wrong"]


def test_regrouping_needs_an_operand_stored_along_k_and_whole_groups():
    tn = make_config(FAMILIES["blocked"], {**RT, "TA": 1, "TB": 0})
    assert any("RT=1" in v for v in violations(tn))  # nothing to regroup
    cp_async = make_config(FAMILIES["blocked"], {**RT, "ASYNC": 1, "STAGES": 3, "TB": 1})
    assert any("RT=1" in v for v in violations(cp_async))
    odd = make_config(FAMILIES["blocked"], {**SMALL, "STAGES": 2, "ASYNC": 0, "RT": 1, "TB": 1})  # 1 load of A, 2 of B
    assert any("RT=1" in v for v in violations(odd))


def test_by_default_b_stored_along_k_is_transposed_first_and_nt_without_that_regroups():
    def default(layout: str, **given: int) -> tuple[int, int]:
        values = make_config(FAMILIES["blocked"], {**dict(zip(("TA", "TB"), LAYOUTS[layout])), **given}).values
        return values["PB"], values["RT"]

    assert {layout: default(layout) for layout in LAYOUTS} == {"NN": (0, 0), "NT": (1, 0), "TN": (0, 0), "TT": (1, 0)}
    assert default("NT", PB=0) == (0, 1) and default("TT", PB=0) == (0, 0)


@pytest.mark.parametrize("layout, rt, pb", [("NN", 0, 0), ("NT", 0, 1), ("TT", 0, 1)])
def test_a_search_of_one_layout_starts_from_that_layouts_default(layout, rt, pb):
    from autotune.families.layouts import layout_choices, narrow_to
    from autotune.search.ranking import fits
    from autotune.space import Limits

    families = narrow_to([FAMILIES["blocked"]], layout_choices(layout))
    moved, others = fits(families, (4096, 4096, 4096), Limits())
    params = (moved + others)[0].values  # the first default a search of the layout measures
    ta, tb = LAYOUTS[layout]
    assert (params["TA"], params["TB"], params["RT"], params["PB"]) == (ta, tb, rt, pb)
