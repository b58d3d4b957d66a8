"""Split-K and skinny kernels on the CPU emulator: right at odd shapes, the same bytes every run,
broken partial sums caught, the blocked family's source unchanged, shape and space rules."""
from __future__ import annotations

import math
import sqlite3

import numpy as np
import pytest

from autotune.backends.reference import random_inputs
from autotune.backends.sim import SimError, run, run_kernel
from autotune.backends.verify import check
from autotune.codegen.render import render, sha256
from autotune.families import BLOCKED, FAMILIES, SKINNY, SPLITK, config_of_row
from autotune.families.chunked import chunked_constraints
from autotune.families.splitk import MAX_TILES
from autotune.space import Config, make_config, shape_violations, violations
from tests.committed import committed_database

# Odd shapes: K not a multiple of the split nor of BK, K < SPLITK*BK (empty chunks), M or N of 1,
# several tiles in both directions (70 x 70 with 32 x 32 tiles).
SHAPES = ((17, 33, 9), (1, 40, 300), (5, 1, 77), (70, 70, 333))
SMALL = {"BM": 32, "BN": 32, "WM": 32, "WN": 16, "WNITER": 1, "TM": 4, "TN": 4}  # 3 x 3 tiles at 70 x 70
SPLITK_CONFIGS = (
    {},  # the default
    {**SMALL, "SPLITK": 4},
    {**SMALL, "SPLITK": 32, "STAGES": 1, "BK": 8},
    {**SMALL, "SPLITK": 64, "BK": 8},  # most chunks empty at these K
    {**SMALL, "SPLITK": 2, "GM": 8},
    {**SMALL, "SPLITK": 16, "ASYNC": 1, "STAGES": 3, "BSWAP": 0},
    {"ASYNC": 1, "STAGES": 2, "BSWAP": 0, "GM": 8, "SPLITK": 16, "BK": 32},
)
MUTATION_SHAPE = (70, 70, 333)
DB = "h200-blocked-squares.sqlite.gz"  # of benchmarks/data (tests.committed)
SPLITK_DB = "h200-4096-one-house-all-families.sqlite.gz"


def splitk(params: dict) -> Config:
    return make_config(SPLITK, params)


def statuses(config: Config, source: str, shapes=SHAPES) -> list[str]:
    runner = lambda cfg, _src, *rest: run(cfg, source, *rest)  # noqa: E731  (the given source)
    return [check(config, source, shape, runner, seed=1).status for shape in shapes]


def output(config: Config, source: str, shape: tuple[int, int, int], seed: int = 3) -> np.ndarray:
    M, N, K = shape
    A, B = random_inputs(M, N, K, seed)
    return run_kernel(source, config.name, config.geometry(M, N), A, B, M, N, K)


def edit(source: str, old: str, new: str) -> str:
    assert source.count(old) >= 1, f"{old!r} is not in the source; the template changed?"
    return source.replace(old, new)


@pytest.mark.parametrize("params", SPLITK_CONFIGS, ids=lambda p: ",".join(f"{k}={v}" for k, v in p.items()) or "default")
def test_splitk_matches_the_reference_at_odd_shapes(params):
    config = splitk(params)
    assert statuses(config, render(config)) == ["ok"] * len(SHAPES)


def test_splitk_gives_the_same_bytes_every_run():
    config = splitk({**SMALL, "SPLITK": 8})
    first, second = (output(config, render(config), (70, 70, 333)) for _ in range(2))
    assert first.tobytes() == second.tobytes()


@pytest.mark.parametrize(("family", "db", "least"), (("blocked", DB, 50), ("skinny", SPLITK_DB, 15)))
def test_the_blocked_family_renders_the_sources_it_was_measured_with(family, db, least):
    """SPLITK=1 and WAVE=0 leave the blocked template's output byte for byte as it was (and KW=1
    skinny's): every kernel of the family measured on the H200 (stored with its source hash) renders
    to that very source. (splitk's epilogue changed since, its adds batched as tailsplit's:
    its recorded rows keep the source they were measured with.)"""
    with committed_database(db) as conn:
        conn.row_factory = sqlite3.Row
        rows = [dict(r) for r in conn.execute("SELECT * FROM results WHERE family = ? AND status = 'ok'", (family,))]
    checked = {}
    for row in rows:
        config = config_of_row(row)
        checked[config.name] = sha256(render(config)) == row["source_hash"]
    assert len(checked) > least and all(checked.values())


def test_splitk_kernel_name_shows_the_split_and_blocked_is_unchanged():
    assert splitk({"SPLITK": 4}).name.endswith("_SK4")
    assert "SK" not in make_config(BLOCKED, {}).name and "SPLITK" not in render(make_config(BLOCKED, {}))


# --------------------------------------------------------------------------- mutations

@pytest.mark.parametrize("shape", [MUTATION_SHAPE, (70, 72, 333)])  # N % 4: scalar adds; else float4 adds
def test_a_dropped_partial_sum_is_wrong(shape):
    """Split 1 skips its addition: the output misses one chunk of K."""
    config = splitk({**SMALL, "SPLITK": 4})
    source = render(config)
    assert statuses(config, source, (shape,)) == ["ok"]
    broken = edit(source, "return add ? __ldcg(c) + v : v;", "return add ? (blockIdx.z == 1 ? __ldcg(c) : __ldcg(c) + v) : v;")
    broken = edit(broken, "return add ? make_float4(old.x + v.x,", "if (blockIdx.z == 1) v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);\n"
                                                                    "    return add ? make_float4(old.x + v.x,")
    assert statuses(config, broken, (shape,)) == ["wrong"]


def test_float4_adds_that_skip_reading_the_earlier_sum_are_wrong():
    config = splitk({**SMALL, "SPLITK": 4})
    broken = edit(render(config), "        if (add) {\n", "        if (false) {\n")  # old C never read
    assert statuses(config, broken, ((70, 72, 333),)) == ["wrong"]


def test_every_split_storing_instead_of_adding_is_wrong():
    config = splitk({**SMALL, "SPLITK": 4})
    broken = edit(render(config), "const bool add = split > 0;", "const bool add = false;")
    assert statuses(config, broken, (MUTATION_SHAPE,)) == ["wrong"]


def test_a_lost_partial_step_at_the_end_of_k_is_wrong():
    """The last chunk's partial BK step (K not a multiple of BK) dropped."""
    config = splitk({**SMALL, "SPLITK": 4})
    broken = edit(render(config), "Kc = min(chunk, K - kBegin);", "Kc = min(chunk, K - kBegin) / BK * BK;")
    assert statuses(config, broken, (MUTATION_SHAPE,)) == ["wrong"]


def test_a_turn_handed_to_the_wrong_split_never_finishes():
    """Split 1 hands the turn to split 3: split 2 waits forever, which the emulator reports."""
    config = splitk({**SMALL, "SPLITK": 4})
    broken = edit(render(config), "split + 1 == splits ? 0u : split + 1", "split + 1 == splits ? 0u : split + 2")
    M, N, K = MUTATION_SHAPE
    A, B = random_inputs(M, N, K, 1)
    with pytest.raises(SimError) as caught:
        run_kernel(broken, config.name, config.geometry(M, N), A, B, M, N, K, timeout=5)
    assert caught.value.kind == "timeout"


# --------------------------------------------------------------------------- space and shape rules

def test_splitk_is_the_blocked_space_times_the_splits_and_the_reduction():
    # all of blocked's but BLAS (the turnstiles are per tile, not per (batch, tile)) and CS (its blocks add
    # partials into C); PB and AL fixed at 0, and the constraints of the two prologues (which read BLAS), CS's
    # and the aligned pairs' BLAS=0 left out with them
    assert [p.name for p in SPLITK.params] == [p.name for p in BLOCKED.params if p.name not in ("BLAS", "CS")] + ["SPLITK", "RED"]
    assert SPLITK.constraints[:-1] == chunked_constraints(BLOCKED.constraints) and SPLITK.template == BLOCKED.template
    assert SPLITK.param("PB").values == SPLITK.param("AL").values == (0,)
    left_out = [c.reason.split()[0] for c in BLOCKED.constraints if c not in SPLITK.constraints]
    assert left_out == ["PB=1", "AL=1", "CS=1", "MA=1", "CS=1's"]
    assert violations(splitk({"RED": 1, "TN": 2}))  # the slots are written as float4s
    assert "splitk" in FAMILIES and not violations(splitk({}))
    assert violations(splitk({"BM": 32, "WM": 64}))[0] == "warp tiles must tile the block tile (BM % WM == 0 and BN % WN == 0)"


def test_more_tiles_than_turnstiles_are_refused_with_the_reason():
    config = splitk({**SMALL})  # 32 x 32 tiles
    assert shape_violations(config, 8192, 8192) == []  # 65536 tiles: exactly the turnstiles
    assert MAX_TILES == 256 * 256
    bad = shape_violations(config, 8192, 8193)
    assert len(bad) == 1 and "exceed the 65536 split-K turnstiles" in bad[0]


def test_splitk_geometry_puts_the_splits_on_z():
    assert splitk({"SPLITK": 16}).geometry(1024, 1024).grid == (8, 8, 16)
    assert splitk({"SPLITK": 4, "GM": 8}).geometry(1000, 1000).grid == (64, 1, 4)


# --------------------------------------------------------------------------- skinny

SKINNY_SHAPES = (*SHAPES, (3, 600, 50), (1, 1, 301), (9, 520, 236))  # 600: three blocks of 64 threads along N;
# 520 x 236: whole blocks with 16-byte loads of A and B (K, N % 4 == 0), then a block of 8 columns
SKINNY_CONFIGS = (
    {},  # the default (KW > 1, SA = 1, SB = 1)
    {"SPLITK": 1},
    {"KT": 64, "SA": 0},  # the default before SA: A read from global memory in the loop
    {"THREADS": 128, "KT": 128, "SPLITK": 32, "KW": 1},  # the default before KW
    {"THREADS": 64, "MR": 1, "KT": 16, "SPLITK": 64, "KW": 1},
    {"THREADS": 64, "MR": 4, "KT": 32, "SPLITK": 4, "KW": 1},
    {"THREADS": 512, "MR": 2, "KT": 256, "SPLITK": 2, "KW": 1},
    # KW > 1: pieces of 16 rows dealt to 4 slices (K's short piece and tail on one slice; slices
    # with no rows at K = 9), then RG = 4 of 16 rows summed at a time (several row groups, M < MR)
    {"THREADS": 32, "MR": 4, "KT": 16, "SPLITK": 2, "KW": 4, "SA": 0},
    {"THREADS": 32, "MR": 16, "KT": 16, "SPLITK": 1, "KW": 16, "SA": 0},
    # SA = 1, SB = 0: each slice (a warp) copies its pieces of A into shared memory a piece ahead; AH
    # groups of B in flight in registers
    {"THREADS": 32, "MR": 4, "KT": 16, "SPLITK": 2, "KW": 4, "SA": 1, "SB": 0},
    {"THREADS": 32, "MR": 16, "KT": 16, "SPLITK": 1, "KW": 8, "SA": 1, "AH": 1, "SB": 0},
    {"THREADS": 32, "MR": 8, "KT": 32, "SPLITK": 4, "KW": 2, "SA": 1, "AH": 3, "SB": 0},
    # SB = 1: B through each lane's ring in shared memory as well (the K tail zero-filled in the last group)
    {"THREADS": 32, "MR": 4, "KT": 16, "SPLITK": 2, "KW": 4, "SA": 1, "SB": 1},
    {"THREADS": 32, "MR": 16, "KT": 16, "SPLITK": 1, "KW": 8, "SA": 1, "AH": 1, "SB": 1},
    {"THREADS": 32, "MR": 8, "KT": 32, "SPLITK": 4, "KW": 2, "SA": 1, "AH": 3, "SB": 1},
    # RED = 1: each split's sum into a workspace slot, the tile's last split adds the slots in split order
    {"THREADS": 32, "MR": 4, "KT": 16, "SPLITK": 8, "KW": 4, "SA": 1, "SB": 1, "RED": 1},  # empty chunks at small K
    {"THREADS": 32, "MR": 16, "KT": 16, "SPLITK": 2, "KW": 4, "SA": 0, "RED": 1},  # rows past M: not in the slots
    # MB = 1: B's rows, where N % 4 != 0 (most of these shapes), read as the aligned float4s around each lane's four
    {"THREADS": 64, "MR": 4, "KT": 32, "SPLITK": 4, "KW": 1, "MB": 1},
    {"THREADS": 32, "MR": 4, "KT": 16, "SPLITK": 2, "KW": 4, "SA": 0, "MB": 1},
    {"THREADS": 32, "MR": 8, "KT": 32, "SPLITK": 4, "KW": 2, "SA": 1, "AH": 3, "SB": 0, "MB": 1},
)


def skinny(params: dict) -> Config:
    return make_config(SKINNY, params)


@pytest.mark.parametrize("params", SKINNY_CONFIGS, ids=lambda p: ",".join(f"{k}={v}" for k, v in p.items()) or "default")
def test_skinny_matches_the_reference_at_odd_shapes(params):
    config = skinny(params)
    assert statuses(config, render(config), SKINNY_SHAPES) == ["ok"] * len(SKINNY_SHAPES)


@pytest.mark.parametrize("kw", (1, 4))
def test_skinny_gives_the_same_bytes_every_run(kw):
    config = skinny({"THREADS": 64, "MR": 4, "KT": 16, "SPLITK": 8, "KW": kw})
    first, second = (output(config, render(config), (10, 300, 333)) for _ in range(2))
    assert first.tobytes() == second.tobytes()


def assert_breaks(params: dict, old: str, new: str) -> None:
    """The config's kernel is right at MUTATION_SHAPE, and wrong there with `old` edited to `new`."""
    config = skinny(params)
    source = render(config)
    assert statuses(config, source, (MUTATION_SHAPE,)) == ["ok"]
    assert statuses(config, edit(source, old, new), (MUTATION_SHAPE,)) == ["wrong"]


def test_skinny_slices_dropped_partial_is_wrong():
    """The in-block sum leaves out the last slice's partials."""
    assert_breaks({"THREADS": 32, "MR": 4, "KT": 16, "SPLITK": 2, "KW": 4},
                  "for (int s = 1; s < KW; ++s) {", "for (int s = 1; s < KW - 1; ++s) {")


@pytest.mark.parametrize("kw", (1, 2))
def test_skinny_dropped_partial_sum_is_wrong(kw):
    config = skinny({"THREADS": 64, "MR": 4, "KT": 32, "SPLITK": 4, "KW": kw})
    source = render(config)
    assert statuses(config, source, (MUTATION_SHAPE,)) == ["ok"]
    broken = edit(source, "if (!add) return v;", "if (!add) return v;\n    if (blockIdx.z == 1) return __ldcg(reinterpret_cast<const float4*>(c));")
    broken = edit(broken, "return add ? __ldcg(c) + v : v;", "return add ? (blockIdx.z == 1 ? __ldcg(c) : __ldcg(c) + v) : v;")
    assert statuses(config, broken, (MUTATION_SHAPE,)) == ["wrong"]


STAGED = {"THREADS": 32, "MR": 4, "KT": 16, "SPLITK": 2, "KW": 4, "SA": 1, "SB": 0}


@pytest.mark.parametrize(("old", "new"), (
    # the next piece copied over the buffer before every lane is done with the piece it held
    ("        __syncwarp();\n        stage(i + 1);", "        stage(i + 1);"),
    # every piece copied into the first buffer: the odd pieces are read from a buffer never filled
    ("float* dst = &As[slice][i % 2][0][0];", "float* dst = &As[slice][0][0][0];"),
    # a piece's A copied from the chunk's first piece of this slice (its rows of K never advance)
    ("const float* src = a + r * K + rowOf(i * KT) + c;", "const float* src = a + r * K + rowOf(0) + c;"),
), ids=("no-meeting-before-the-copy", "one-buffer", "stale-rows-of-A"))
def test_skinny_staged_a_broken_is_wrong(old, new):
    """SA = 1: each slice copies its pieces of A into two buffers a piece ahead; each break of that
    hand-over gives a wrong product on the emulator (whose __syncwarp is a meeting of the lanes)."""
    assert_breaks(STAGED, old, new)


ALIGNED_PAIRS = {"THREADS": 32, "MR": 4, "KT": 16, "SPLITK": 2, "KW": 4, "SA": 0, "MB": 1}


@pytest.mark.parametrize(("old", "new"), (
    # a row one float past a 16-byte boundary takes its fourth value from its own float4, not the next one
    ("d == 1 ? make_float4(lo.y, lo.z, lo.w, hi.x)", "d == 1 ? make_float4(lo.y, lo.z, lo.w, lo.x)"),
    # the second float4 never read: the values past the first boundary are zeros
    ("const bool two = d + have > 4;", "const bool two = false;"),
), ids=("wrong-pick", "one-float4"))
def test_skinny_aligned_pairs_broken_is_wrong(old, new):
    """MB = 1: at N = 69 the rows of B start at every offset from a 16-byte boundary (69 % 4 == 1); a wrong pick of
    the four values, or the second aligned float4 left out, gives a wrong product."""
    config, shape = skinny(ALIGNED_PAIRS), (70, 69, 333)
    source = render(config)
    assert statuses(config, source, (shape,)) == ["ok"]
    assert statuses(config, edit(source, old, new), (shape,)) == ["wrong"]


def test_skinny_lost_tail_of_k_is_wrong():
    """The last, partial group of four rows of B in a tile (K % 4 != 0) dropped."""
    config = skinny({"THREADS": 64, "MR": 4, "KT": 32, "SPLITK": 1, "KW": 1})
    broken = edit(render(config), "if (k < kt) step(k, kt - k, vecB);", "")
    assert statuses(config, broken, (MUTATION_SHAPE,)) == ["wrong"]


RING = {**STAGED, "SB": 1}


@pytest.mark.parametrize(("old", "new"), (
    # a group's rows of B copied into the slots of the group before it
    ("float* dst = reinterpret_cast<float*>(&Bs[slice][slot][0][tid]);",
     "float* dst = reinterpret_cast<float*>(&Bs[slice][(slot + 1) % AHEAD][0][tid]);"),
    # the lane reads its neighbour's slots, which that lane copied (no meeting makes them seen)
    ("bk[j] = Bs[slice][s][j][tid];", "bk[j] = Bs[slice][s][j][tid ^ 1];"),
    # the last, partial group of four rows (K's tail) never copied: its slots keep an older group
    ("const int groups = (kc + 3) / 4;", "const int groups = kc / 4;"),
    # the next piece of A copied over the buffer before every lane is done with the piece it held
    ("            __syncwarp();\n            stage(g / (KT / 4) + 1);", "            stage(g / (KT / 4) + 1);"),
), ids=("slot-off-by-one", "neighbours-slots", "lost-tail-of-k", "no-meeting-before-the-copy"))
def test_skinny_ring_of_b_broken_is_wrong(old, new):
    """SB = 1: each lane copies its own rows of B into a ring of AH groups in shared memory and reads
    back only those; each break of that gives a wrong product on the emulator."""
    assert_breaks(RING, old, new)


def test_skinny_ring_whole_group_copy_past_the_tail_is_wrong():
    """SB = 1 with 16-byte copies (N a multiple of the block's 128 columns): the whole-group copy, which
    tests no row, taken for the last, partial group too copies rows of B past the slice's rows: past
    the end of B in the last chunk (the emulator's bounds check), another slice's rows elsewhere."""
    config, shape = skinny(RING), (70, 128, 333)
    source = render(config)
    assert statuses(config, source, (shape,)) == ["ok"]
    broken = edit(source, "if (vec && 4 * g + 4 <= kc)", "if (vec && 4 * g < kc)")
    assert statuses(config, broken, (shape,)) == ["out_of_bounds"]


@pytest.mark.parametrize(("old", "new"), (
    # run one round of groups further, while the refills are the tail's: rows of B past the slice's
    # rows are copied (past the end of B in the last chunk, another slice's rows elsewhere)
    ("for (; g0 + 2 * AHEAD <= kc / 4; g0 += AHEAD)", "for (; g0 + AHEAD <= kc / 4; g0 += AHEAD)"),
    # the pointer to B's rows moved on three rows a group instead of four
    ("                    b += 4 * N;", "                    b += 3 * N;"),
    # the refill ahead of the FMAs taken one step too early, before the slot's group is read out of it: the
    # FMAs get group g + AHEAD's rows (the emulator's copies land at once)
    ("                        take(g, s, bk);\n                        copy4_whole(b, s);",
     "                        copy4_whole(b, s);\n                        take(g, s, bk);"),
), ids=("past-the-whole-groups", "rows-of-b-skipped", "refill-before-the-read"))
def test_skinny_ring_hot_loop_broken_is_wrong(old, new):
    """SB = 1 with 16-byte copies (N a multiple of the block's 128 columns): the hot loop refills its
    slots with four whole rows from a pointer moved on a group at a time, testing nothing."""
    config, shape = skinny(RING), (70, 128, 333)
    source = render(config)
    assert statuses(config, source, (shape,)) == ["ok"]
    assert statuses(config, edit(source, old, new), (shape,))[0] in ("out_of_bounds", "wrong")


SUMMED = {"THREADS": 32, "MR": 4, "KT": 16, "SPLITK": 4, "KW": 4, "SA": 1, "SB": 1}


def test_skinny_workspace_sum_gives_the_turnstiles_bytes_whichever_split_is_last(monkeypatch):
    """RED=1 adds the splits' sums in split order whichever split arrives last (the emulator runs the
    splits first to last, then last to first): the bytes of RED=0's chain every time."""
    red, chain = skinny({**SUMMED, "RED": 1}), skinny(SUMMED)
    shape = (70, 300, 333)
    expected = output(chain, render(chain), shape).tobytes()
    assert output(red, render(red), shape).tobytes() == expected
    monkeypatch.setenv("SIM_Z_DESCENDING", "1")
    assert output(red, render(red), shape).tobytes() == expected


@pytest.mark.parametrize(("old", "new"), (
    # the last split leaves one split's slot out of the sum
    ("const float4 q = __ldcg(p + s * MR * THREADS);", "const float4 q = s == 2 ? make_float4(0.0f, 0.0f, 0.0f, 0.0f) : __ldcg(p + s * MR * THREADS);"),
    # every split writes its sum into split 0's slot
    ("&slots[(split * MR + g + r) * THREADS * 4 + t * 4]", "&slots[(g + r) * THREADS * 4 + t * 4]"),
    # a split that is not last goes on as if it were: it stores the slots there are so far and resets the
    # tile's counter, so the split that really comes last never counts as last
    ("if (*arrived != 3) return;", "if (*arrived != 3 && split != 1) return;"),
), ids=("skipped-slot", "one-slot", "early-store"))
def test_skinny_workspace_sum_broken_is_wrong(old, new):
    assert_breaks({**SUMMED, "RED": 1}, old, new)


@pytest.mark.parametrize("sa", (0, 1))
def test_skinny_slices_lost_tail_of_k_is_wrong(sa):
    """KW > 1: the last, partial group of four rows of B (K % 4 != 0) dropped."""
    config = skinny({"THREADS": 32, "MR": 4, "KT": 16, "SPLITK": 2, "KW": 4, "SA": sa, "SB": 0})
    broken = edit(render(config), "if (full < kc) {", "if (false) {")
    assert statuses(config, broken, (MUTATION_SHAPE,)) == ["wrong"]


def test_skinny_space_constraints_and_shape_rules():
    from autotune.api.commands import describe_space
    from autotune.space import Limits

    sizes = {p.name: len(p.values) for p in SKINNY.params}
    total = math.prod(sizes.values())
    threads, slices = SKINNY.param("THREADS").values, SKINNY.param("KW").values[1:]
    tiles = sizes["MR"] * sizes["KT"] * sizes["SPLITK"]
    # KW = 1 keeps AH and SA at their defaults; KW > 1: the thread limit, and with SA = 1 (one warp a
    # slice) the A buffers' KW*2*MR*KT floats within 48 KiB (the in-block sum always fits there); with SB = 1
    # too, those buffers and the rings of B (KW*32*AH*64 bytes) within 227 KiB of dynamic shared memory
    rows, depths, aheads = SKINNY.param("MR").values, SKINNY.param("KT").values, SKINNY.param("AH").values
    staged = sum(w * 2 * mr * kt * 4 <= 48 * 1024 for w in slices for mr in rows for kt in depths)
    ringed = sum(w * (2 * mr * kt * 4 + 32 * ah * 64) <= 227 * 1024
                 for w in slices for mr in rows for kt in depths for ah in aheads)
    # and RED (2 values) only where SPLITK > 1 and KW > 1: one split count of SPLITK's has RED=0 alone; MB (2 values)
    # wherever B goes through registers (SB = 0), not with B's ring (SB = 1)
    splits = 2 * sizes["SPLITK"] - 1
    registers = (len(threads) * tiles + sum(t * w <= 1024 for t in threads for w in slices) * tiles // sizes["SPLITK"]
                 * splits * sizes["AH"] + staged * splits * sizes["AH"])
    valid = sizes["MB"] * registers + ringed * splits
    text = describe_space(SKINNY, Limits())
    assert "skinny:" in text and f"{valid} valid of {total} combinations" in text
    small = Limits(max_static_shared=8 * 1024)
    assert violations(skinny({"MR": 16, "KT": 256, "KW": 1}), small) == [
        "static shared memory MR*KT*4 bytes must fit the 48 KiB static __shared__ limit"]
    assert violations(skinny({"MR": 16, "KT": 256, "KW": 8}), small) == [
        "the in-block sum's KW*RG*THREADS*16 bytes of static shared memory must fit the 48 KiB limit"]
    assert violations(skinny({"THREADS": 256, "KW": 8})) == [
        "a block's threads THREADS*KW must not exceed the device limit (1024)"]
    launch = skinny({"THREADS": 32, "MR": 16, "KW": 8, "SPLITK": 4}).geometry(16, 8192)
    assert launch.grid == (8192 // (4 * 32), 1, 4) and launch.block == (32 * 8, 1, 1)
    assert skinny({"MR": 1, "THREADS": 64, "KT": 128, "SPLITK": 32, "KW": 1}).name == "sgemm_skinny_T64_MR1_KT128_SK32"
    assert skinny({"MR": 1, "THREADS": 64, "KT": 128, "SPLITK": 32, "KW": 2}).name.endswith("_SK32_KW2")
    bad = shape_violations(skinny({"MR": 1, "THREADS": 64}), 40000, 512)  # 80000 tiles of 1 x 256
    assert len(bad) == 1 and "80000 output tiles of 1x256 exceed the 65536 split-K turnstiles" in bad[0]
    assert shape_violations(skinny({"MR": 1, "THREADS": 64, "SPLITK": 1}), 40000, 512) == []
    assert violations(skinny({"SPLITK": 1, "RED": 1})) == violations(skinny({"KW": 1, "SA": 0, "SB": 0, "RED": 1})) == [
        "RED=1 needs SPLITK > 1 (splits to sum) and KW > 1 (the sum through the slots is written for the sliced kernel)"]
    summed = skinny({"MR": 16, "SPLITK": 64, "RED": 1})  # 16 x 128 floats per tile and split
    assert summed.name.endswith("_SK64_KW8_AH2_SA1_SB1_RD1") and shape_violations(summed, 16, 8192) == []
    assert "workspace" in shape_violations(summed, 16, 8192 + 128)[0]  # one tile more


@pytest.mark.parametrize("shape, expected", [
    ((256, 256, 262144), {"BN": 256, "SPLITK": 66, "RED": 2}),  # 2 wide tiles: the splits that fill 132 SMs, in a tree
    ((1024, 1024, 65536), {"BN": 256, "SPLITK": 4, "RED": 1}),  # 32 wide tiles x 4 fill 132 places once; full thread tiles
    ((64, 8192, 8192), {"BM": 64, "WM": 32, "SPLITK": 4}),  # half of a 128-row tile would be padding; 64 outputs a thread: no RED
    ((4096, 4096, 4096), {"BN": 256}),  # 512 wide tiles fill the GPU: the split is left as it is
    ((8192, 8192, 64), {"BN": 256}),  # K too short to split
    ((8192, 128, 8192), {"SPLITK": 4, "RED": 1}),  # N = 128 does not fill a wide tile
    # 4 wide tiles x 8 splits (K allows no more) fill 32 SMs: the 64 x 64 tile of 4 x 4 sub-tiles, 4 splits
    ((512, 512, 512), {"BM": 64, "BN": 64, "WM": 32, "WN": 32, "WNITER": 1, "TM": 4, "SPLITK": 4}),
    ((1024, 1024, 1024), {"BN": 256, "SPLITK": 4, "RED": 1}),  # 32 wide tiles x 16 splits would fill them: kept
])
def test_the_default_is_fitted_to_the_shape(shape, expected):
    from autotune.space import Limits

    fitted = SPLITK.fit(make_config(SPLITK, {}).values, shape, Limits())
    assert fitted == expected and not violations(make_config(SPLITK, fitted))


def test_a_search_measures_the_fitted_default_before_the_default(db):
    from autotune.search.loop import run_search
    from autotune.space import Limits
    from tests.fakes import FakeBackend

    run_search(db, FakeBackend(256, 256, 262144), [SPLITK], Limits(), sampler="random", trials=2, seed=1)
    first = [r["kernel"] for r in db.query("SELECT r.kernel FROM trials t JOIN results r ON r.id = t.result_id "
                                           "ORDER BY t.id LIMIT 2")]
    assert first == [splitk({"BN": 256, "SPLITK": 66, "RED": 2}).name, splitk({}).name]


@pytest.mark.parametrize("family, shape, expected", [
    # The fewest splits of 8-slice blocks that reach 1.5 blocks a SM, then 16 slices and half the splits,
    # their sums through the workspace (RED=1 from 2 splits with 16 slices)
    ("skinny", (1, 8192, 8192), {"MR": 1, "KW": 16, "SPLITK": 2, "RED": 1}),  # one row: MR=8 would be seven rows of zeros
    ("skinny", (3, 8192, 8192), {"MR": 4, "KW": 16, "SPLITK": 2, "RED": 1}),
    ("skinny", (8, 8192, 8192), {"KW": 16, "SPLITK": 2, "RED": 1}),  # 64 tiles x 4 splits of 8 slices: 256 blocks
    # SA=1: 16 rows in one block-row (B read once)
    ("skinny", (16, 8192, 8192), {"MR": 16, "KW": 16, "SPLITK": 2, "RED": 1}),
    ("skinny", (16, 14336, 4096), {"MR": 16, "KW": 16, "SPLITK": 1}),  # 112 tiles x 2 splits of 8 slices: one of 16
    ("skinny", (16, 4096, 14336), {"MR": 16, "KW": 16, "RED": 1}),  # 8 splits of 8 slices: 4 of 16
    ("skinny", (12, 100, 50), {"MR": 16, "SPLITK": 1}),  # K = 50: no split gives each slice a piece
    ("skinny", (64, 8192, 8192), {"MR": 16, "SPLITK": 1}),  # 4 block-rows x 64 tiles: 1.5 blocks a SM unsplit
    # a long K on few columns: half the slices where that doubles the splits, until the blocks reach the SMs
    ("skinny", (1, 689, 7472), {"MR": 1, "KW": 4, "SPLITK": 32, "RED": 1}),  # 6 tiles: 96 blocks at 8 slices
    ("skinny", (2, 504, 3921), {"MR": 2, "KW": 2, "SPLITK": 32, "RED": 1}),
    ("skinny", (2, 11427, 189), {"MR": 2, "SPLITK": 1}),  # 4 slices allow no more splits than 8: kept
    ("tall", (8192, 1, 8192), {"NR": 4}),  # one float4 of B per row beat NR=1 on the H200
    ("tall", (8192, 16, 8192), {}),  # the default's 4 splits: 128 block-rows, 512 blocks
    # splits only where each keeps two KT-row tiles of K; the fewest that reach 2 blocks an SM
    ("tall", (11516, 4, 108), {"NR": 4, "SPLITK": 1}),
    # (A's rows not whole float4s, K % 4 != 0: A through registers, ST=0)
    ("tall", (9954, 21, 61), {"SPLITK": 1, "ST": 0}),
    ("tall", (16230, 13, 3786), {"SPLITK": 2, "ST": 0}),  # 254 block-rows
    ("tall", (2076, 6, 2407), {"NR": 8, "SPLITK": 8, "ST": 0}),  # 33 block-rows
    ("tall", (4096, 4096, 4096), {}),  # 256 column blocks: not a shape of the family's kind, no splits set
])
def test_gemv_like_defaults_fit_their_block_to_the_few_rows_or_columns(family, shape, expected):
    from autotune.space import Limits

    fam = FAMILIES[family]
    fitted = fam.fit(make_config(fam, {}).values, shape, Limits())
    assert fitted == expected and not violations(make_config(fam, fitted))


# Each split's partial into a workspace slot; RED=1: summed in split order by the tile's last split,
# RED=2: in pairs along a fixed binary tree over the splits.
RED_CONFIGS = tuple({**c, "RED": red} for red in (1, 2) for c in (
    {**SMALL, "SPLITK": 4}, {**SMALL, "SPLITK": 64, "BK": 8}, {**SMALL, "SPLITK": 2, "GM": 8, "STAGES": 3, "ASYNC": 1, "BSWAP": 0}))


@pytest.mark.parametrize("params", RED_CONFIGS, ids=lambda p: ",".join(f"{k}={v}" for k, v in p.items()))
def test_the_workspace_reductions_match_the_reference_at_odd_shapes(params):
    config = splitk(params)
    assert statuses(config, render(config)) == ["ok"] * len(SHAPES)


def test_the_workspace_reduction_gives_the_turnstiles_bytes_every_run():
    """The same sum in the same order: RED=1's output equals RED=0's bit for bit, run after run."""
    red, chain = splitk({**SMALL, "SPLITK": 8, "RED": 1}), splitk({**SMALL, "SPLITK": 8})
    outputs = [output(c, render(c), (70, 72, 333)) for c in (red, red, chain)]
    assert outputs[0].tobytes() == outputs[1].tobytes() == outputs[2].tobytes()


def test_a_last_split_that_skips_a_slot_is_wrong():
    config = splitk({**SMALL, "SPLITK": 4, "RED": 1})
    broken = edit(render(config), "const float4 p = __ldcg(", "if (s == 2) continue;\n                        const float4 p = __ldcg(")
    assert statuses(config, broken, ((70, 72, 333),)) == ["wrong"]


def tree_outputs(source: str, config: Config, monkeypatch) -> list[bytes]:
    """The kernel's output with the splits run first to last, then last to first (the emulator's
    SIM_Z_DESCENDING): the two orders in which the blocks of every pair meet."""
    outputs = []
    for descending in (False, True):
        if descending:
            monkeypatch.setenv("SIM_Z_DESCENDING", "1")
        outputs.append(output(config, source, (70, 72, 333)).tobytes())
    monkeypatch.delenv("SIM_Z_DESCENDING")
    return outputs


def test_the_tree_reduction_gives_the_same_bytes_whichever_split_of_a_pair_arrives_first(monkeypatch):
    config = splitk({**SMALL, "SPLITK": 8, "RED": 2})
    source = render(config)
    first_to_last, last_to_first = tree_outputs(source, config, monkeypatch)
    assert first_to_last == last_to_first
    assert check(config, source, (70, 72, 333), lambda cfg, _src, *rest: run(cfg, source, *rest)).status == "ok"
    # A reduction that depends on the order: a right node that arrives first climbs on as if second,
    # adding a sibling's slot not yet written. Right when left nodes come first (ascending), not otherwise.
    broken = edit(source, "if (*arrived == 0) return;", "if (*arrived == 0 && node % 2 == 0) return;")
    first_to_last, last_to_first = tree_outputs(broken, config, monkeypatch)
    assert first_to_last == output(config, source, (70, 72, 333)).tobytes() and first_to_last != last_to_first


def test_a_tree_that_drops_a_sibling_partial_is_wrong():
    config = splitk({**SMALL, "SPLITK": 8, "RED": 2})
    broken = edit(render(config), "v[0] += p.x; v[1] += p.y; v[2] += p.z; v[3] += p.w;",
                  "if (level != 1) { v[0] += p.x; v[1] += p.y; v[2] += p.z; v[3] += p.w; }")
    assert statuses(config, broken, ((70, 72, 333),)) == ["wrong"]


# The splits that fill a device's SMs at a few tiles (splitk.fills): counts that are no powers of two, in each
# reduction, most chunks of K empty at these shapes
FILL_CONFIGS = ({**SMALL, "SPLITK": 57, "BK": 8}, {**SMALL, "SPLITK": 41, "BK": 8, "RED": 1},
                {**SMALL, "SPLITK": 66, "BK": 8, "RED": 2})


@pytest.mark.parametrize("params", FILL_CONFIGS, ids=lambda p: f"SPLITK={p['SPLITK']},RED={p.get('RED', 0)}")
def test_splits_that_fill_the_sms_match_the_reference_at_odd_shapes(params):
    config = splitk(params)
    assert statuses(config, render(config)) == ["ok"] * len(SHAPES)


def test_a_tree_over_an_odd_count_of_splits_gives_the_same_bytes_whichever_split_arrives_first(monkeypatch):
    config = splitk({**SMALL, "SPLITK": 71, "BK": 8, "RED": 2})  # 71, 36, 18, 9, 5, 3, 2 nodes: lone nodes climb
    first_to_last, last_to_first = tree_outputs(render(config), config, monkeypatch)
    assert first_to_last == last_to_first


@pytest.mark.parametrize("device, splits", [
    ("h200", (2, 4, 8, 16, 32, 64, 66, 132)),  # 132 SMs: one or two tiles, 132 / tiles splits
    ("a100", (2, 4, 8, 16, 32, 54, 64, 108)),
    ("rtx4090", (2, 4, 8, 16, 32, 64, 128)),  # 128 SMs: 64 is a power of two already
])
def test_a_search_walks_the_splits_of_its_own_device(device, splits):
    from autotune.space.config import on_device
    from autotune.space.devices import preset

    assert on_device(SPLITK, preset(device)).param("SPLITK").values == splits


@pytest.mark.parametrize("device, split", [("h200", 66), ("h100-pcie", 57), ("a100", 54), ("rtx4090", 64)])
def test_two_tiles_of_a_long_k_take_the_split_that_fills_the_sms(device, split):
    """256 x 256 x 262144: two 128 x 256 tiles, one block an SM: the device's SMs / 2 splits (64 leave 4 of 132
    SMs idle); 32 tiles (1024 x 1024 x 65536) take a power of two, as before."""
    from autotune.space.devices import preset

    limits = preset(device)
    assert SPLITK.fit(make_config(SPLITK, {}).values, (256, 256, 262144), limits)["SPLITK"] == split
    assert SPLITK.fit(make_config(SPLITK, {}).values, (1024, 1024, 65536), limits)["SPLITK"] in (2, 4, 8, 16, 32, 64)


def test_a_workspace_too_small_for_the_shape_is_refused_with_the_reason():
    config = splitk({"SPLITK": 64, "RED": 1})
    assert not shape_violations(config, 256, 256)
    assert any("workspace" in r for r in shape_violations(config, 4096, 4096))
