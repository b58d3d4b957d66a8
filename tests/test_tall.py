"""The tall family (small N) on the CPU emulator: right at odd shapes, the same bytes every run, a
lost lane, a dropped tail of K or a dropped split caught; the same for the cp.async pipeline (ST > 0),
whose sums equal ST = 0's bit for bit and whose broken hand-overs of stages are caught; its space,
shape rules and SASS; and the emulator's warp shuffles it relies on."""
from __future__ import annotations

import itertools
import math
from dataclasses import replace

import numpy as np
import pytest

from autotune.backends.reference import random_inputs
from autotune.backends.sim import SimError, run, run_kernel
from autotune.backends.verify import check
from autotune.codegen.render import render
from autotune.errors import AutotuneError
from autotune.families import FAMILIES, TALL
from autotune.space import Config, Limits, make_config, shape_violations, violations

# M, N, K of 1; N not a multiple of NR (33, 40, 3); K not a multiple of 4 (9, 77, 333: A's rows
# misaligned for float4) nor of KT (300 = 4 whole tiles of 64 + 44); rows past the last block (70).
SHAPES = ((1, 1, 1), (17, 33, 9), (1, 40, 300), (5, 1, 77), (70, 3, 333), (130, 16, 300))
CONFIGS = (
    {},  # the default
    {"SPLITK": 1},
    {"THREADS": 64, "LANES": 4, "ROWS": 1, "NR": 1, "KT": 32, "SPLITK": 32},
    {"THREADS": 128, "LANES": 32, "ROWS": 4, "NR": 4, "KT": 128, "SPLITK": 2},
)
SPLIT = {"THREADS": 64, "LANES": 8, "ROWS": 2, "NR": 4, "KT": 32, "SPLITK": 4, "ST": 0}  # 8 blocks along M at 70 rows
MUTATION_SHAPE = (70, 6, 300)  # 4-byte aligned K with a partial last tile of each split


def tall(params: dict) -> Config:
    return make_config(TALL, params)


def statuses(config: Config, source: str, shapes=SHAPES) -> list[str]:
    runner = lambda cfg, _src, *rest: run(cfg, source, *rest)  # noqa: E731  (the given source)
    return [check(config, source, shape, runner, seed=1).status for shape in shapes]


def edit(source: str, old: str, new: str) -> str:
    assert source.count(old) >= 1, f"{old!r} is not in the source; the template changed?"
    return source.replace(old, new)


@pytest.mark.parametrize("params", CONFIGS, ids=lambda p: ",".join(f"{k}={v}" for k, v in p.items()) or "default")
def test_tall_matches_the_reference_at_odd_shapes(params):
    config = tall(params)
    assert statuses(config, render(config)) == ["ok"] * len(SHAPES)


def output(config: Config, source: str, shape: tuple[int, int, int]) -> np.ndarray:
    M, N, K = shape
    A, B = random_inputs(M, N, K, 3)
    return run_kernel(source, config.name, config.geometry(M, N), A, B, M, N, K)


@pytest.mark.parametrize("st", (0, 3))
def test_tall_gives_the_same_bytes_every_run(st):
    config = tall({**SPLIT, "ST": st})
    first, second = (output(config, render(config), (70, 6, 333)) for _ in range(2))
    assert first.tobytes() == second.tobytes()


# --------------------------------------------------------------------------- mutations

def test_a_lost_reduction_lane_is_wrong():
    """The butterfly's first step skipped: each lane's sum misses half its group's lanes."""
    config = tall({**SPLIT, "SPLITK": 1})
    source = render(config)
    assert statuses(config, source, (MUTATION_SHAPE,)) == ["ok"]
    broken = edit(source, "for (int d = LANES / 2; d > 0; d /= 2)", "for (int d = LANES / 4; d > 0; d /= 2)")
    assert statuses(config, broken, (MUTATION_SHAPE,)) == ["wrong"]


def test_a_dropped_tail_of_k_is_wrong():
    """The partial last tile (K % KT != 0) skipped."""
    config = tall({**SPLIT, "SPLITK": 1})
    broken = edit(render(config), "for (; k0 < Kc; k0 += KT, buf ^= 1) {", "for (; k0 < 0; k0 += KT, buf ^= 1) {")
    assert statuses(config, broken, (MUTATION_SHAPE,)) == ["wrong"]


def test_a_dropped_partial_sum_is_wrong():
    """Split 1 keeps C as the splits before it left it instead of adding its own."""
    config = tall(SPLIT)
    source = render(config)
    assert statuses(config, source, (MUTATION_SHAPE,)) == ["ok"]
    broken = edit(source, "return add ? __ldcg(c) + v : v;",
                  "return add ? (blockIdx.z == 1 ? __ldcg(c) : __ldcg(c) + v) : v;")
    assert statuses(config, broken, (MUTATION_SHAPE,)) == ["wrong"]


def test_a_shuffle_some_lanes_skip_is_an_emulator_error():
    """Lane 0 of each group leaves the butterfly: its warp-mates wait at a shuffle it never reaches."""
    config = tall({**SPLIT, "SPLITK": 1})
    broken = edit(render(config), "acc[r][n] += __shfl_xor_sync(", "if (lane != 0) acc[r][n] += __shfl_xor_sync(")
    M, N, K = MUTATION_SHAPE
    A, B = random_inputs(M, N, K, 1)
    with pytest.raises(SimError) as caught:
        run_kernel(broken, config.name, config.geometry(M, N), A, B, M, N, K)
    assert caught.value.kind == "barrier" and "waits at a warp shuffle" in str(caught.value)


def test_emulator_shuffles_read_the_partner_lane():
    """__shfl_xor_sync(v, d) returns lane (l ^ d)'s value, in a warp of 32 and in a partial warp."""
    source = """
extern "C" __global__ void shfl(const float* A, const float* B, float* C, int M, int N, int K)
{
    const int t = threadIdx.x;
    const float mine = A[t];
    C[t] = __shfl_xor_sync(0xffffffffu, mine, 1) + 100.0f * __shfl_xor_sync(0xffffffffu, mine, 16);
}
"""
    from autotune.space import Launch

    n = 64
    A = np.arange(n, dtype=np.float32).reshape(n, 1)
    C = run_kernel(source, "shfl", Launch((1, 1, 1), (n, 1, 1)), A, np.ones((1, 1)), n, 1, 1)
    lanes = np.arange(n)
    assert np.array_equal(C[:, 0], (lanes ^ 1) + 100.0 * (lanes ^ 16))


# --------------------------------------------------------------------------- stages (ST > 0)

# (9, 5, 1001): 32 tiles of 32 in one chunk, K % 4 != 0: the stages wrap round many times
STAGED_SHAPES = (*SHAPES, (9, 5, 1001))
STAGED_CONFIGS = (
    {"ST": 4},  # the default's tiles
    {"KT": 32, "SPLITK": 1, "ST": 3},
    {"THREADS": 64, "LANES": 4, "ROWS": 1, "NR": 1, "KT": 32, "SPLITK": 32, "ST": 6},
    {"THREADS": 128, "LANES": 32, "ROWS": 4, "NR": 4, "KT": 128, "SPLITK": 2, "ST": 3},
    # only with stages: 32 float4s of A and 32 floats of B a thread per tile, 172 KiB of shared memory
    {"THREADS": 64, "LANES": 4, "ROWS": 2, "NR": 8, "KT": 256, "SPLITK": 2, "ST": 4},
)
STAGED = {**SPLIT, "SPLITK": 2, "ST": 3}  # chunks of 5 tiles at K = 300: the three stages wrap round


@pytest.mark.parametrize("params", STAGED_CONFIGS, ids=lambda p: ",".join(f"{k}={v}" for k, v in p.items()))
def test_tall_stages_match_the_reference_at_odd_shapes(params):
    config = tall(params)
    assert statuses(config, render(config), STAGED_SHAPES) == ["ok"] * len(STAGED_SHAPES)


@pytest.mark.parametrize("shape", ((70, 6, 300), (70, 6, 333), (9, 5, 1001)))
def test_tall_stages_add_what_the_registers_add(shape):
    """ST > 0 multiplies the same float4s in the same order as ST = 0, zeros past the tile included:
    the same bits in C."""
    outputs = [output(config, render(config), shape) for config in (tall(SPLIT), tall({**SPLIT, "ST": 4}))]
    assert outputs[0].tobytes() == outputs[1].tobytes()


@pytest.mark.parametrize(("old", "new"), (
    # the tile ST-1 ahead copied into the stage of the tile about to be multiplied
    ("smem4 + writeStage * STAGE4", "smem4 + readStage * STAGE4"),
    # the stage ring off by one: each tile copied over the one before it, not yet multiplied
    ("int readStage = 0, writeStage = ST - 1;", "int readStage = 0, writeStage = ST - 2;"),
    # the chunk's last, partial tile never copied nor multiplied
    ("const int tiles = (Kc + KT - 1) / KT;", "const int tiles = Kc / KT;"),
    # a stage taken over before every thread is done with it, and read before others' copies
    ("        __syncthreads();\n        if (t + ST - 1", "        if (t + ST - 1"),
    # one tile fewer on its way before the loop: the loop then multiplies a stage never filled
    ("for (int t = 0; t < ST - 1; ++t) {", "for (int t = 0; t < ST - 2; ++t) {"),
), ids=("copy-into-the-stage-read", "stage-off-by-one", "no-tail-of-k", "no-barrier", "short-prologue"))
def test_tall_stages_broken_are_wrong(old, new):
    """Each break of the pipeline's hand-over of stages gives a wrong product on the emulator, whose
    copies land at once and whose __syncthreads is a meeting of the block's threads. (A missing or
    short cp.async wait it cannot see: its copies land at once.)"""
    config = tall(STAGED)
    source = render(config)
    assert statuses(config, source, (MUTATION_SHAPE,)) == ["ok"]
    assert statuses(config, edit(source, old, new), (MUTATION_SHAPE,)) == ["wrong"]


@pytest.mark.parametrize("shape", (MUTATION_SHAPE, (70, 6, 333)), ids=("16-byte-copies", "4-byte-copies"))
def test_tall_stages_copy_no_a_past_the_tile(shape):
    """A's copies of the chunk's last tile not cut at its end read the next chunk or row, and past the
    end of A at its last row: with 16-byte copies (K % 4 == 0) and with 4-byte ones."""
    config = tall(STAGED)
    source = render(config)
    assert statuses(config, source, (shape,)) == ["ok"]
    assert statuses(config, edit(source, "const bool ok = c < kt;", "const bool ok = c < KT;"), (shape,)) == ["out_of_bounds"]


# --------------------------------------------------------------------------- space, shapes, model

def test_tall_space_constraints_and_shape_rules():
    from autotune.api.commands import describe_space

    assert FAMILIES["tall"] is TALL and not violations(tall({}))
    assert "tall:" in describe_space(TALL, Limits()).splitlines()[0]
    assert violations(tall({"LANES": 32, "KT": 64})) == [
        "a tile of KT rows of B must give each of a group's LANES lanes whole float4s (KT % (4*LANES) == 0)"]
    assert violations(tall({"LANES": 4, "KT": 256, "ROWS": 8, "NR": 8, "ST": 0})) == [
        "ST=0: a lane's float4s of A per tile, KT/(4*LANES)*ROWS, are held in registers: at most 16"]
    assert violations(tall({"THREADS": 64, "KT": 128, "ST": 0})) == [
        "ST=0: a thread's share of the B tile, KT*NR/THREADS floats, is held in registers: at most 16"]
    assert violations(tall({"ROWS": 8, "ST": 0})) == ["a lane's ROWS*NR partial sums are held in registers: at most 64"]
    small = Limits(max_static_shared=8 * 1024)
    assert violations(tall({"ST": 0}), small) == [
        "ST=0: static shared memory 2*KT/(4*LANES)*NR*(LANES+1)*16 bytes must fit the 48 KiB static __shared__ limit"]
    # with stages A and B go to shared memory by cp.async: the register and static limits are moot, the
    # stages' dynamic shared memory must fit the opt-in limit
    assert not violations(tall({"LANES": 4, "KT": 256, "ROWS": 2, "NR": 8, "THREADS": 64, "ST": 4}), small)
    assert violations(tall({"LANES": 4, "KT": 256, "ST": 4})) == [
        "ST>0: the stages, ST*KT/(4*LANES)*(ROWS*THREADS + NR*(LANES+1))*16 bytes of dynamic shared memory, "
        "must fit the 227 KiB opt-in limit"]
    # ST = 0: the 5106 valid configs there were before ST; each ST > 0 needs whole float4s per lane, at
    # most 64 sums a lane and its stages within 227 KiB
    values = {p.name: p.values for p in TALL.params}
    staged = sum(kt % (4 * lanes) == 0 and rows * nr <= 64
                 and st * kt // (4 * lanes) * (rows * threads + nr * (lanes + 1)) * 16 <= 227 * 1024
                 for threads, lanes, rows, nr, kt, st in itertools.product(
                     *(values[k] for k in ("THREADS", "LANES", "ROWS", "NR", "KT")), values["ST"][1:]))
    total = math.prod(len(v) for v in values.values())
    assert f"{5106 + staged * len(values['SPLITK'])} valid of {total} combinations" in describe_space(TALL, Limits())
    # 8192 x 16: 128 block-rows of 64 rows, one column block, four splits
    assert tall({}).geometry(8192, 16).grid == (1, 128, 4) and tall({}).geometry(8192, 16).threads == 256
    assert tall({}).geometry(100, 33).grid == (3, 2, 4)
    assert tall({"ST": 0}).name == "sgemm_tall_T256_L8_R2_NR16_KT64_SK4"  # ST=0 left out of the name
    assert tall({}).name == "sgemm_tall_T256_L8_R2_NR16_KT64_SK4_ST4"
    assert tall({"ST": 0}).geometry(8192, 16).shared_bytes == 0
    # the default's four stages of 64 rows x 64 k of A (16 KiB) and B's 2 x 16 rows of 9 float4s
    assert tall({}).geometry(8192, 16) == replace(tall({"ST": 0}).geometry(8192, 16), shared_bytes=4 * (16384 + 4608))
    one_row = {"THREADS": 64, "LANES": 32, "ROWS": 1, "NR": 1, "KT": 128}  # 2 rows per block
    bad = shape_violations(tall(one_row), 4000, 40)  # 2000 block-rows x 40 column blocks
    assert len(bad) == 1 and "80000 output tiles of 2x1 exceed the 65536 split-K turnstiles" in bad[0]
    assert shape_violations(tall({**one_row, "SPLITK": 1}), 4000, 40) == []


def test_the_model_gives_tall_its_traffic():
    from autotune.explain.model import intensity

    assert intensity(tall({"NR": 16})) == 8 and intensity(tall({"NR": 1})) == 0.5


def test_the_register_kernel_streams_a_with_16_byte_loads_and_does_not_spill():
    from autotune.explain.sass import analyze

    registers = tall({"ST": 0})  # the default's tiles, A loaded into registers
    try:
        report = analyze(registers)
    except AutotuneError as exc:
        pytest.skip(str(exc))  # nvdisasm absent: pip install 'sgemm-autotune[sass]'
    p, d = TALL.params, registers.derived
    assert [x.name for x in p] == ["THREADS", "LANES", "ROWS", "NR", "KT", "SPLITK", "ST"]
    values = registers.values
    assert report.loop.ffma == 4 * values["NR"] * values["ROWS"] * d["QL"]  # a whole tile, unrolled
    assert report.loop.ldg.get(128) == values["ROWS"] * d["QL"]  # A: float4s only
    assert report.loop.lds == {128: values["NR"] * d["QL"]}  # B: one LDS.128 per column and step
    assert not report.resources.spills and report.resources.registers <= 128


def test_the_stages_copy_a_and_b_with_cp_async_and_keep_the_loop_in_registers():
    """ST > 0: no load of A or B in the loop but cp.async (LDGSTS), one barrier a tile, a float4 of A
    per row and of B per column and step from shared memory, and no spill in the loop."""
    from autotune.explain.sass import analyze

    config = tall({"ST": 4})
    try:
        report = analyze(config)
    except AutotuneError as exc:
        pytest.skip(str(exc))  # nvdisasm absent: pip install 'sgemm-autotune[sass]'
    values, d = config.values, config.derived
    loop = report.loop
    assert loop.ffma == 4 * values["NR"] * values["ROWS"] * d["QL"] and loop.bar == 1
    assert loop.ldg == {} and loop.lds == {128: (values["ROWS"] + values["NR"]) * d["QL"]}
    # the tile's copies: 16-byte ones of A (or, K % 4 != 0, four 4-byte ones each in a loop over the steps)
    # and B's 4-byte ones
    assert loop.ldgsts == values["ROWS"] * (d["QL"] + 4) + d["BLOADS"]
    assert loop.ldl == loop.stl == 0 and report.resources.registers <= 128


def test_the_fit_takes_a_through_registers_where_k_leaves_rows_misaligned():
    """The fit takes ST=0 where K % 4 != 0 (the stages would copy A 4 bytes at a time), and keeps the stages elsewhere."""
    from autotune.space import fitted

    assert fitted(tall({}), (4096, 16, 255), Limits()).values["ST"] == 0
    assert fitted(tall({}), (4096, 16, 256), Limits()).values["ST"] == 4
    assert fitted(tall({"ST": 4}), (4096, 16, 255), Limits(), {"ST": 4}).values["ST"] == 4  # given, kept


def test_the_fits_reason_for_st0_at_misaligned_k_is_the_committed_measurement():
    """tall.fit's docstring: at 16384x15x255 and 8192x31x255, of the configs measured with ST=0 and ST=4 and alike
    otherwise, how many took longer with the stages (benchmarks/data/tall-short-k-h100.sqlite.gz, an H100)."""
    import inspect

    from autotune.families import tall as module
    from tests.committed import committed_database

    with committed_database("tall-short-k-h100.sqlite.gz") as db:
        pairs = db.execute(
            "SELECT a.time_ms, b.time_ms FROM results a JOIN results b USING (M, N, K, THREADS, LANES, ROWS, NR, KT, "
            "SPLITK) WHERE a.ST = 0 AND b.ST = 4 AND a.status = 'ok' AND b.status = 'ok' AND a.K % 4 != 0").fetchall()
    slower = sum(staged > plain for plain, staged in pairs)
    doc = " ".join(inspect.getdoc(module.fit).split())
    assert f"of {len(pairs)} configs that differ in ST alone {slower} took longer with ST=4 than with ST=0" in doc


def test_the_docstrings_case_against_pairs_is_the_committed_measurements():
    """tall's docstring: reading misaligned rows of A as aligned pairs lost, at the tall lattice's corners of odd K
    and at three shapes of long K (the two databases of benchmarks/data, an H100)."""
    import inspect
    from pathlib import Path

    from autotune.families import tall as module
    from tests.committed import committed_database

    ratios, odd = {}, 0
    for name in ("h100-tall-corners.sqlite.gz", "tall-pairs-long-k-h100.sqlite.gz"):
        with committed_database(name) as db:
            ratios[name] = [r for r, in db.execute(
                "SELECT b.time_ms / a.time_ms FROM results a JOIN results b USING (M, N, K, THREADS, LANES, ROWS, NR, "
                "KT, SPLITK, ST) WHERE coalesce(a.MA, 0) = 0 AND b.MA = 1 AND a.status = 'ok' AND b.status = 'ok'")]
            if name.startswith("h100-tall"):
                odd = db.execute("SELECT count(DISTINCT M || 'x' || N || 'x' || K) FROM results WHERE K % 4 != 0").fetchone()[0]
    corners, long_k = ratios.values()
    doc = " ".join(inspect.getdoc(module).split())
    assert len(corners) == odd == 20 and len(long_k) == 6 and min(corners + long_k) > 1
    assert (f"at the tall host-bound lattice's {odd} corners of odd K the fitted default took {min(corners):.2f}-"
            f"{max(corners):.2f}x as long with the pairs") in doc
    assert f"4096x15x16383 {min(long_k):.2f}-{max(long_k):.2f}x" in doc and "MA" not in {p.name for p in TALL.params}
    families = " ".join((Path(__file__).resolve().parents[1] / "docs" / "families.md").read_text().split())
    assert f"they took {min(corners + long_k):.2f}-{max(corners + long_k):.2f}x as long on an H100" in families
