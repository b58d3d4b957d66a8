"""The tall family (small N) on the CPU emulator: right at odd shapes, the same bytes every run, a
lost lane, a dropped tail of K or a dropped split caught; its space, shape rules and SASS; and the
emulator's warp shuffles it relies on."""
from __future__ import annotations

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
SPLIT = {"THREADS": 64, "LANES": 8, "ROWS": 2, "NR": 4, "KT": 32, "SPLITK": 4}  # 8 blocks along M at 70 rows
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


def test_tall_gives_the_same_bytes_every_run():
    config = tall(SPLIT)
    M, N, K = 70, 6, 333
    A, B = random_inputs(M, N, K, 3)
    first, second = (run_kernel(render(config), config.name, config.geometry(M, N), A, B, M, N, K) for _ in range(2))
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


# --------------------------------------------------------------------------- space, shapes, model

def test_tall_space_constraints_and_shape_rules():
    from autotune.api.commands import describe_space

    assert FAMILIES["tall"] is TALL and not violations(tall({}))
    assert "tall:" in describe_space(TALL, Limits()).splitlines()[0]
    assert violations(tall({"LANES": 32, "KT": 64})) == [
        "a tile of KT rows of B must give each of a group's LANES lanes whole float4s (KT % (4*LANES) == 0)"]
    assert violations(tall({"LANES": 4, "KT": 256, "ROWS": 8, "NR": 8})) == [
        "a lane's float4s of A per tile, KT/(4*LANES)*ROWS, are held in registers: at most 16"]
    assert violations(tall({"THREADS": 64, "KT": 128})) == [
        "a thread's share of the B tile, KT*NR/THREADS floats, is held in registers: at most 16"]
    assert violations(tall({"ROWS": 8})) == ["a lane's ROWS*NR partial sums are held in registers: at most 64"]
    small = Limits(max_static_shared=8 * 1024)
    assert violations(tall({}), small) == [
        "static shared memory 2*KT/(4*LANES)*NR*(LANES+1)*16 bytes must fit the 48 KiB static __shared__ limit"]
    # 8192 x 16: 128 block-rows of 64 rows, one column block, four splits
    assert tall({}).geometry(8192, 16).grid == (1, 128, 4) and tall({}).geometry(8192, 16).threads == 256
    assert tall({}).geometry(100, 33).grid == (3, 2, 4)
    assert tall({}).name == "sgemm_tall_T256_L8_R2_NR16_KT64_SK4"
    one_row = {"THREADS": 64, "LANES": 32, "ROWS": 1, "NR": 1, "KT": 128}  # 2 rows per block
    bad = shape_violations(tall(one_row), 4000, 40)  # 2000 block-rows x 40 column blocks
    assert len(bad) == 1 and "80000 output tiles of 2x1 exceed the 65536 split-K turnstiles" in bad[0]
    assert shape_violations(tall({**one_row, "SPLITK": 1}), 4000, 40) == []


def test_the_model_gives_tall_its_traffic():
    from autotune.explain.model import intensity

    assert intensity(tall({"NR": 16})) == 8 and intensity(tall({"NR": 1})) == 0.5


def test_the_default_streams_a_with_16_byte_loads_and_does_not_spill():
    from autotune.explain.sass import analyze

    try:
        report = analyze(tall({}))
    except AutotuneError as exc:
        pytest.skip(str(exc))  # nvdisasm absent: pip install 'autotune[sass]'
    p, d = TALL.params, tall({}).derived
    assert [x.name for x in p] == ["THREADS", "LANES", "ROWS", "NR", "KT", "SPLITK"]
    values = tall({}).values
    assert report.loop.ffma == 4 * values["NR"] * values["ROWS"] * d["QL"]  # a whole tile, unrolled
    assert report.loop.ldg.get(128) == values["ROWS"] * d["QL"]  # A: float4s only
    assert report.loop.lds == {128: values["NR"] * d["QL"]}  # B: one LDS.128 per column and step
    assert not report.resources.spills and report.resources.registers <= 128
