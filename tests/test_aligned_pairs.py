"""blocked's MA and MB (and the families on its template: splitk, tailsplit, streamk): where an operand's rows are
not whole 16-byte vectors, a thread's four values of a row are read as the one or two aligned float4s that hold
them. On the CPU emulator (which bounds-checks every read) the product is right at shapes whose rows start at
every offset from a 16-byte boundary, in each layout and with K split, including the last values of each operand
(where a second float4 would pass its end); mutations are caught; the constraints and the search's walk say where
they apply; offline the kernel keeps to registers."""
from __future__ import annotations

import pytest

from autotune.backends.sim import run
from autotune.backends.verify import TOLERANCE, check
from autotune.codegen.render import render
from autotune.families import FAMILIES
from autotune.space import Limits, at_shape, make_config, violations
from tests.emulated import edit, sass_kernels, verified

BLOCKED = FAMILIES["blocked"]
SMALL = {"BM": 32, "BN": 32, "BK": 8, "WM": 16, "WN": 32, "WNITER": 1, "TM": 2, "TN": 4}
CONFIGS = [
    ("blocked", {"MA": 1, "MB": 1}),  # the default tile
    ("blocked", {**SMALL, "MA": 1, "MB": 1}),
    ("blocked", {**SMALL, "MB": 1, "TB": 1, "PB": 0}),  # NT: B's rows are K long
    ("blocked", {**SMALL, "MA": 1, "TA": 1}),  # TN: A's rows are M long
    ("blocked", {**SMALL, "MA": 1, "MB": 1, "TA": 1, "TB": 1, "PB": 0}),
    ("splitk", {**SMALL, "MA": 1, "MB": 1, "SPLITK": 4}),  # A and B moved on to each split's first k
    ("splitk", {**SMALL, "MA": 1, "MB": 1, "SPLITK": 4, "TA": 1, "TB": 1}),
    ("tailsplit", {**SMALL, "MA": 1, "MB": 1}),
    ("streamk", {**SMALL, "MA": 1, "MB": 1}),
]
# odd M, N, K (rows at every offset), 2 mod 4, a K below one float4, several tiles with edges both ways
SHAPES = [(37, 29, 23), (33, 70, 41), (5, 3, 7), (131, 267, 93)]


@pytest.mark.parametrize(("family", "values"), CONFIGS, ids=lambda x: x if isinstance(x, str) else
                         ",".join(f"{k}{v}" for k, v in x.items() if k in ("MA", "MB", "TA", "TB", "SPLITK")))
def test_the_product_is_right_at_every_offset(family: str, values: dict[str, int]) -> None:
    config = make_config(FAMILIES[family], values)
    assert not violations(config)
    source = render(config)
    assert "pair4(" in source
    for shape in SHAPES:
        row = check(config, source, shape, run)
        assert row.status == "ok" and row.error <= TOLERANCE, (shape, row.status, row.reason)


def test_ma0_mb0_render_no_pairs_and_keep_their_names() -> None:
    plain, paired = make_config(BLOCKED, {}), make_config(BLOCKED, {"MA": 1, "MB": 1})
    assert "pair4" not in render(plain) and "pair4" in render(paired)
    assert "MA" not in plain.name and paired.name == plain.name + "_MA1_MB1"


@pytest.mark.parametrize(("old", "new"), [
    # a row one float past a boundary takes its fourth value from its own float4, not the next one
    ("d == 1 ? make_float4(lo.y, lo.z, lo.w, hi.x)", "d == 1 ? make_float4(lo.y, lo.z, lo.w, lo.x)"),
    # the second float4 never read: the values past the first boundary are zeros
    ("const bool two = d + have > 4;", "const bool two = false;"),
], ids=["wrong pick", "one float4"])
def test_mutations_of_the_pairs_are_caught(old: str, new: str) -> None:
    config = make_config(BLOCKED, {**SMALL, "MA": 1, "MB": 1})
    row = verified(config, edit(render(config), old, new), (37, 29, 23))
    assert row.status != "ok", row


def test_the_values_past_a_rows_end_are_not_carried_in() -> None:
    """A's rows of K = 23: the last float4 of row 0 also holds row 1's first value. An infinity there must not
    come into row 0's sum (times the zeros past B's last row it would be NaN): with the values past the last
    column kept, it does."""
    import numpy as np

    from autotune.backends.reference import random_inputs

    config = make_config(BLOCKED, {**SMALL, "MA": 1, "MB": 1})
    M, N, K = 37, 29, 23
    A, B = random_inputs(M, N, K, 1)
    A[1, 0] = np.inf
    source = render(config)
    right = run(config, source, config.geometry(M, N), A, B, M, N, K)
    assert np.isfinite(right[0]).all() and np.allclose(right[0], A[0].astype(np.float64) @ B, atol=1e-5)
    kept = edit(source, "    if (have < 4) v.w = 0.0f;", "    if (have < 0) v.w = 0.0f;")
    assert not np.isfinite(run(config, kept, config.geometry(M, N), A, B, M, N, K)[0]).all()


def test_reading_past_an_operands_end_is_caught() -> None:
    """Without the end test a last row's second float4 reads past B: the emulator's bounds checks say so."""
    config = make_config(BLOCKED, {**SMALL, "MA": 1, "MB": 1})
    source = edit(render(config), "if (end == nullptr || base + (two ? 8 : 4) > end)", "if (end == nullptr)")
    row = verified(config, source, (37, 29, 23))
    assert row.status != "ok" and "past the end" in row.reason, row


def test_constraints_say_what_the_pairs_need() -> None:
    for values, says in (({"MA": 1, "ASYNC": 1, "STAGES": 2}, "ASYNC=0"), ({"MB": 1, "AL": 1}, "AL=0"),
                         ({"MB": 1, "TB": 1, "PB": 1}, "PB=0"), ({"MA": 1, "BLAS": 1}, "BLAS=0")):
        assert any(says in v for v in violations(make_config(BLOCKED, values))), values
    assert not violations(make_config(BLOCKED, {"MA": 1, "MB": 1}))


@pytest.mark.parametrize(("shape", "ma", "mb"), [
    ((64, 128, 32), (0,), (0,)),  # every row a whole number of float4s: neither is walked
    ((64, 127, 32), (0,), (0, 1)),  # N odd: B's rows (NN)
    ((64, 128, 33), (0, 1), (0, 1)),  # K odd: A's rows, and B's stored N x K
    ((63, 128, 32), (0, 1), (0,)),  # M odd: A stored K x M
])
def test_a_search_walks_them_only_where_rows_can_be_unaligned(shape, ma, mb) -> None:
    walked = at_shape(BLOCKED, shape)
    assert (walked.param("MA").values, walked.param("MB").values) == (ma, mb)


def test_the_kernel_keeps_to_registers() -> None:
    from autotune.explain.sass import Instr

    config = make_config(BLOCKED, {"MA": 1, "MB": 1})
    _, kernels = sass_kernels(config, "sm_90")
    ops = [x.opcode.split(".")[0] for x in kernels[config.name] if isinstance(x, Instr)]
    assert "LDL" not in ops and "STL" not in ops
    assert config.geometry(100, 101, Limits()).shared_bytes == make_config(BLOCKED, {}).geometry(100, 101, Limits()).shared_bytes
