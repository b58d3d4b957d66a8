"""The stream-K family on the CPU emulator: right at odd shapes with a persistent grid of a few blocks (the
family's grid is SKB x Limits.sms, so Limits(sms=4) makes the emulator's small shapes persistent as a GPU
makes large ones), the same bytes every run, in every block order and on a second launch; broken fixups
caught; the partition of the work (Python's copy of the kernel's rule), the constraints, the shape rule
and the fit."""
from __future__ import annotations

import numpy as np
import pytest

from autotune.backends.reference import random_inputs
from autotune.backends.sim import run, run_kernel
from autotune.backends.verify import check
from autotune.codegen.render import render
from autotune.families import BLOCKED, FAMILIES, families_for
from autotune.families.chunked import chunked_constraints
from autotune.families.streamk import (
    MAX_BLOCKS,
    STREAMK,
    WS_FLOATS,
    blocks,
    max_blocks,
    region,
    segments,
    tiles,
    whole_tiles,
)
from autotune.space import Config, Limits, make_config, shape_violations, violations

SMALL = {"BM": 32, "BN": 32, "WM": 32, "WN": 16, "WNITER": 1, "TM": 4, "TN": 4}
SMS = 4  # the emulated device's SMs: 4 x SKB blocks
# Odd shapes: M, N not multiples of the tile, K not of BK; few tiles and a long K (67 x 45: 6 tiles; 130 x
# 129: 25 tiles, a wave and a bit of 8 blocks); a row or a column; K shorter than a step.
SHAPES = ((67, 45, 300), (130, 129, 777), (1, 40, 300), (5, 1, 77), (17, 33, 9))
CONFIGS = (
    {**SMALL},  # DP=2, SKB=2: 8 blocks
    {**SMALL, "DP": 0, "SKB": 4},  # every tile shared by 16 blocks: cut tiles of 3 parts and more
    {**SMALL, "DP": 1, "SKB": 1},  # whole waves of 4 data-parallel, the rest shared
    {**SMALL, "DP": 2, "SKB": 1, "GM": 8, "STAGES": 1, "BK": 8},
    {**SMALL, "DP": 0, "ASYNC": 1, "STAGES": 3, "BSWAP": 0},
    {**SMALL, "DP": 0, "EARLY": 1, "ORDER": 0},  # a body after a body: EARLY's last fragment reads
    {"BM": 64, "BN": 64, "WM": 32, "WN": 32, "WNITER": 1, "TM": 4, "DP": 0, "SKB": 3},
    {**SMALL, "TB": 1, "DP": 0},  # NT (nn.Linear's x W^T)
    {**SMALL, "TA": 1, "TB": 1, "DP": 1, "ASYNC": 1, "STAGES": 2, "BSWAP": 0},
)
# 6 tiles of 32 x 32 on 16 blocks: every tile cut into 3 parts or more, so the order of its sum shows
FIXUP = ((67, 45, 300), {**SMALL, "DP": 0, "SKB": 4})


def streamk(params: dict) -> Config:
    return make_config(STREAMK, params)


def launch(config: Config, M: int, N: int, sms: int = SMS):
    return config.geometry(M, N, Limits(sms=sms))


def statuses(config: Config, source: str, shapes=SHAPES, sms: int = SMS) -> list[str]:
    """verify.check's verdicts, the config launched on a device of `sms` SMs."""
    def runner(cfg, _src, _launch, A, B, M, N, K):
        return run(cfg, source, launch(cfg, M, N, sms), A, B, M, N, K)

    return [check(config, source, shape, runner, seed=1).status for shape in shapes]


def output(config: Config, source: str, shape: tuple[int, int, int], sms: int = SMS, A=None, B=None) -> np.ndarray:
    M, N, K = shape
    if A is None:
        A, B = random_inputs(M, N, K, 3)
    return run_kernel(source, config.name, launch(config, M, N, sms), A, B, M, N, K)


def edit(source: str, old: str, new: str) -> str:
    assert source.count(old) == 1, f"{old!r} is not in the source once; the template changed?"
    return source.replace(old, new)


def cut_tiles(p: dict, shape: tuple[int, int, int], g: int) -> dict[int, int]:
    """{tile: its parts} of the tiles cut across blocks at this shape on g blocks."""
    M, N, K = shape
    parts: dict[int, int] = {}
    steps = region(p, M, N, K, g)[0]
    for b in range(g):
        for tile, _, n in segments(p, M, N, K, g, b):
            if n < steps:
                parts[tile] = parts.get(tile, 0) + 1
    return parts


@pytest.mark.parametrize("params", CONFIGS, ids=lambda p: ",".join(f"{k}={v}" for k, v in p.items() if k not in SMALL))
def test_streamk_matches_the_reference_at_odd_shapes(params):
    config = streamk(params)
    assert statuses(config, render(config)) == ["ok"] * len(SHAPES)


def test_the_shapes_cut_tiles_across_blocks():
    """The tests above run the fixup: at their shapes tiles are cut, into many parts with FIXUP's config."""
    shape, params = FIXUP
    p = streamk(params).values
    assert min(cut_tiles(p, shape, blocks(p, Limits(sms=SMS))).values()) >= 3
    assert cut_tiles(streamk(SMALL).values, (130, 129, 777), 2 * SMS)


@pytest.mark.parametrize("sms", (1, 3, 4, 7, 13))
def test_one_config_is_right_on_devices_of_any_sm_count(sms):
    config = streamk({**SMALL, "DP": 2})
    assert statuses(config, render(config), ((130, 129, 777), (67, 45, 300)), sms=sms) == ["ok", "ok"]


@pytest.mark.parametrize("sms", (3, 4, 7))
def test_every_k_step_is_added_exactly_once(sms):
    """A and B all ones: every element of C is exactly K (a step lost or summed twice is off by at least 1)."""
    config = streamk({**SMALL, "DP": 0, "SKB": 3, "BK": 8, "STAGES": 1})
    M, N, K = 67, 45, 301
    C = output(config, render(config), (M, N, K), sms, np.ones((M, K)), np.ones((K, N)))
    assert np.array_equal(C, np.full((M, N), K, dtype=np.float32))


ORDERS = (None, "descending", "shuffle:1", "shuffle:2")


def outputs_by_order(config: Config, source: str, shape, monkeypatch, orders=ORDERS) -> list[bytes]:
    out = []
    for order in orders:
        if order is None:
            monkeypatch.delenv("SIM_BLOCK_ORDER", raising=False)
        else:
            monkeypatch.setenv("SIM_BLOCK_ORDER", order)
        out.append(output(config, source, shape).tobytes())
    monkeypatch.delenv("SIM_BLOCK_ORDER", raising=False)
    return out


@pytest.mark.parametrize("params", (FIXUP[1], {**SMALL, "DP": 2}))
def test_the_same_bytes_every_run_and_in_every_block_order(params, monkeypatch):
    """Whichever block of a cut tile arrives last sums its parts, in k order: the bytes do not change."""
    config = streamk(params)
    source = render(config)
    for shape in (FIXUP[0], (130, 129, 777)):
        first, *others = outputs_by_order(config, source, shape, monkeypatch) + [output(config, source, shape).tobytes()]
        assert all(other == first for other in others)


def test_a_second_launch_gives_the_first_ones_bytes(monkeypatch):
    """The counters are set back to 0 by each launch's last arrival: launched twice in one process (the
    module's counters kept), the second launch is right, and bit for bit the first."""
    shape, params = FIXUP
    config = streamk(params)
    source = render(config)
    once = output(config, source, shape)
    monkeypatch.setenv("SIM_LAUNCHES", "3")
    assert output(config, source, shape).tobytes() == once.tobytes()
    assert statuses(config, source, (shape,)) == ["ok"]


def test_the_emulator_backend_runs_the_grid_of_its_limits():
    """SimBackend's limits reach the geometry: on 4 SMs the kernel runs as a persistent grid of 8 blocks."""
    from autotune.backends.sim.backend import SimBackend

    config = streamk(SMALL)
    backend = SimBackend(67, 45, 300, limits=Limits(sms=SMS))
    assert backend.limits.sms == SMS and launch(config, 67, 45).grid == (8, 1, 1)
    assert backend.measure(config, render(config)).status == "ok"


# --------------------------------------------------------------------------- mutations

FOR_SEGMENTS = "for (int c = first; c <= last; ++c) {"


def test_a_dropped_partial_is_wrong():
    """The last block to arrive sums all parts but the last segment's."""
    shape, params = FIXUP
    config = streamk(params)
    broken = edit(render(config), FOR_SEGMENTS, "for (int c = first; c < last; ++c) {")
    assert statuses(config, broken, (shape,)) == ["wrong"]


def test_a_partial_written_over_by_the_blocks_other_segment_is_wrong(monkeypatch):
    """One slot per block, not two: a block's last segment overwrites its first one's partial before the
    tile it belongs to is summed. Blocks run in index order, a block is the last to arrive at the tile its
    range starts in (and sums it at once), so only another order shows it: why the tests run several."""
    shape, params = FIXUP
    config = streamk(params)
    broken = edit(render(config), "return static_cast<size_t>(2 * b + (streamk_begin(s, b) >= t0 ? 0 : 1))",
                  "return static_cast<size_t>(2 * b)")
    shapes = (shape, (130, 129, 777))
    assert statuses(config, broken, shapes) == ["ok", "ok"]
    for order in ("descending", "shuffle:1"):
        monkeypatch.setenv("SIM_BLOCK_ORDER", order)
        assert statuses(config, broken, shapes) == ["wrong", "wrong"]


def test_a_fixup_summed_out_of_order_changes_the_bits():
    """The parts summed last to first: the same terms, still within the FP32 contract, but other bits; so the
    order of the sum is what fixes the output, and the tests above would see it change."""
    shape, params = FIXUP
    config = streamk(params)
    source = render(config)
    broken = edit(edit(source, FOR_SEGMENTS, "for (int c = last; c >= first; --c) {"),
                  "if (c == first) {  // the first segment as it is", "if (c == last) {")
    assert statuses(config, broken, (shape,)) == ["ok"]
    assert output(config, broken, shape).tobytes() != output(config, source, shape).tobytes()


def test_a_counter_not_set_back_makes_the_second_launch_wrong(monkeypatch):
    shape, params = FIXUP
    config = streamk(params)
    broken = edit(render(config), "if (tid == 0) streamk_arrived[first] = 0;", "")
    assert statuses(config, broken, (shape,)) == ["ok"]  # one launch: the counters start at 0
    monkeypatch.setenv("SIM_LAUNCHES", "2")
    assert statuses(config, broken, (shape,)) == ["wrong"]


# --------------------------------------------------------------------------- the partition

@pytest.mark.parametrize("dp", (0, 1, 2))
def test_every_step_of_every_tile_is_run_once_in_equal_shares(dp):
    """For tile counts around the grid's waves, K of 1 to 13 steps and grids of 1 to 40 blocks: every k-step of
    every tile is run by exactly one block; the stream-K blocks' shares differ by one step at most; a block has
    at most two cut segments (its two slots: one starting its range, one its last) and holds the first step of
    at most one cut tile (its counter); DP=2 gives each stream-K block 1 to 2 tiles' steps where T > G."""
    p = {**streamk(SMALL).values, "DP": dp}
    for g in (1, 2, 3, 4, 7, 16, 40):
        for t_rows in (1, 2, 3, 5, 9):
            for k in (1, 16, 40, 100, 208):
                M, N, K = 32 * t_rows - 3, 32 * 3, k
                t = tiles(p, M, N)
                steps, whole, q, more = region(p, M, N, K, g)
                assert whole == whole_tiles(dp, t, g) and steps == -(-K // 16)
                seen: dict[tuple[int, int], int] = {}
                firsts = []
                for b in range(g):
                    shared = [s for s in segments(p, M, N, K, g, b) if s[0] >= whole]
                    assert sum(n for _, _, n in shared) in ((q, q + 1) if b < more else (q,))
                    cut = [s for s in shared if s[2] < steps]
                    assert len(cut) <= 2 and all(s is shared[0] or s is shared[-1] for s in cut)
                    firsts += [tile for tile, k0, _ in cut if k0 == 0]
                    for tile, k0, n in segments(p, M, N, K, g, b):
                        for x in range(k0, k0 + n):
                            seen[(tile, x)] = seen.get((tile, x), 0) + 1
                assert seen == {(tile, x): 1 for tile in range(t) for x in range(steps)}
                assert len(firsts) == len(set(firsts))
                if dp == 2 and t > g and t % g:
                    assert steps <= q <= 2 * steps


def test_the_data_parallel_policies():
    assert [whole_tiles(0, t, 8) for t in (5, 8, 13, 16, 20)] == [0, 0, 0, 0, 0]
    assert [whole_tiles(1, t, 8) for t in (5, 8, 13, 16, 20)] == [0, 8, 8, 16, 16]
    assert [whole_tiles(2, t, 8) for t in (5, 8, 13, 16, 20, 30)] == [0, 8, 0, 16, 8, 16]


# --------------------------------------------------------------------------- the space

def test_streamk_is_the_blocked_space_with_blocks_per_sm_and_a_data_parallel_policy():
    assert [p.name for p in STREAMK.params] == [p.name for p in BLOCKED.params if p.name not in ("BLAS", "CS")] + ["SKB", "DP"]
    assert STREAMK.constraints[:-2] == chunked_constraints(BLOCKED.constraints)
    assert STREAMK.param("PB").values == STREAMK.param("AL").values == (0,)
    assert STREAMK.template == "streamk.cu.j2" and "streamk" in FAMILIES and "streamk" in families_for("fp32")
    config = streamk({})
    assert not violations(config) and config.name.endswith("_SB2_DP2")
    assert render(config).count("static __device__ unsigned streamk_arrived[512];") == 1


def test_the_constraints_say_why():
    assert violations(streamk({"TN": 2, "BSWAP": 0})) == [
        "TN must be a multiple of 4 (the partial tiles go to the workspace as float4s)"]
    wide = streamk({"BN": 256, "SKB": 2})  # 128 x 256: 256 blocks' slots, 264 blocks on 132 SMs
    assert max_blocks(wide.values) == WS_FLOATS // (2 * 128 * 256) == 256 <= MAX_BLOCKS
    why = violations(wide)
    assert len(why) == 1 and why[0].startswith("SKB x the device's SMs blocks of two BM x BN partial tiles")
    assert not violations(wide, Limits(sms=100)) and not violations(streamk({"BN": 256, "SKB": 1}))


def test_the_grid_is_blocks_per_sm_times_the_devices_sms():
    config = streamk({"SKB": 3})
    assert config.geometry(4096, 4096).grid == (396, 1, 1)  # the default device: 132 SMs
    assert config.geometry(1, 1, Limits(sms=114)).grid == (342, 1, 1)
    assert config.geometry(1, 1, Limits(sms=114)).block == (128, 1, 1)
    assert make_config(BLOCKED, {}).geometry(64, 64, Limits(sms=4)) == make_config(BLOCKED, {}).geometry(64, 64)


def test_a_shape_whose_steps_could_overflow_an_int_is_refused_with_the_reason():
    small = streamk({**SMALL, "BK": 8})
    assert shape_violations(streamk({}), 8192, 8192) == []
    assert shape_violations(small, 2048, 2048) == []
    bad = shape_violations(small, 8192, 8192)
    assert len(bad) == 1 and "which the kernel's int indices cannot count" in bad[0]


@pytest.mark.parametrize("shape, limits, expected", [
    # eight warps of 32 x 64 hold one block an SM
    ((1024, 1024, 16384), Limits(), {"WM": 32, "SKB": 1, "DP": 0}),  # 64 tiles on 132 blocks: all shared
    ((2176, 2048, 2048), Limits(), {"WM": 32, "SKB": 1}),  # 272 tiles on 132 blocks: two-tile stream-K (DP=2)
    ((4096, 4096, 4096), Limits(), {"WM": 32, "SKB": 1}),  # 1024 tiles: whole waves data-parallel, the last two shared
    ((64, 1024, 50000), Limits(), {"BM": 64, "WM": 32, "DP": 0}),  # a tile halved to M, with its warp tile
    ((130, 129, 777), Limits(sms=4), {"WM": 32, "SKB": 1, "DP": 0}),  # 4 tiles of 128 x 128 on 4 blocks
])
def test_the_default_is_fitted_to_the_tiles_and_the_sms(shape, limits, expected):
    p = streamk({}).values
    fitted = STREAMK.fit(p, shape, limits)
    assert fitted == expected and not violations(streamk(fitted), limits)


def test_the_fit_takes_the_blocks_an_sm_holds_within_the_workspace():
    p = streamk({}).values  # 128 threads of 128 accumulators: 2 blocks an SM by registers; slots for 512 blocks
    four = frozenset({"WM"})  # the default's four 64 x 64 warps kept
    assert STREAMK.fit(p, (1024, 1024, 16384), Limits(), four).get("SKB", p["SKB"]) == 2
    assert STREAMK.fit(p, (1024, 1024, 16384), Limits(sms=300), four)["SKB"] == 1  # 600 blocks' slots do not fit
    assert STREAMK.fit(p, (1024, 1024, 16384), Limits())["SKB"] == 1  # eight warps of 64 accumulators: 256 threads
    wide = {**p, "BN": 256, "SKB": 1}  # 256 threads of 128 accumulators: 1 block an SM
    assert STREAMK.fit(wide, (1024, 1024, 16384), Limits()).get("SKB", 1) == 1


def test_a_search_measures_the_fitted_default_first(db):
    from autotune.search.loop import run_search
    from tests.fakes import FakeBackend

    run_search(db, FakeBackend(1024, 1024, 16384), [STREAMK], Limits(), sampler="random", trials=2, seed=1)
    first = [r["kernel"] for r in db.query("SELECT r.kernel FROM trials t JOIN results r ON r.id = t.result_id "
                                           "ORDER BY t.id LIMIT 2")]
    assert first == [streamk({"WM": 32, "SKB": 1, "DP": 0}).name, streamk({}).name]


# --------------------------------------------------------------------------- offline compiles

COMPILED = ({}, {"DP": 0}, {"DP": 1, "SKB": 1, "GM": 8}, {"ASYNC": 1, "STAGES": 3, "BSWAP": 0}, {"BN": 256, "SKB": 1},
            {"TB": 1}, {"BK": 8})


@pytest.mark.parametrize("params", COMPILED, ids=lambda p: ",".join(f"{k}={v}" for k, v in p.items()) or "default")
def test_configs_compile_to_sm90_cubins(params):
    from autotune.codegen.nvrtc import compile_source

    config = streamk(params)
    built = compile_source(render(config), config.name, "sm_90")
    assert built.ok, built.log
    assert config.name.encode() in built.cubin


def test_the_defaults_main_loop_keeps_its_values_in_registers():
    """The sm_90 SASS of the default: its main loop (the loop of most FFMAs) reloads at most 2 spilled values an
    iteration of BK k-steps; with whole tiles and segments as two out-of-line functions it was 35-41."""
    from autotune.codegen.nvrtc import compile_source
    from autotune.errors import AutotuneError
    from autotune.explain.sass import count, disassemble

    config = streamk({})
    built = compile_source(render(config), config.name, "sm_90")
    try:
        text = disassemble(built.cubin)
    except AutotuneError:
        pytest.skip("nvdisasm absent: pip install 'sgemm-autotune[sass]'")
    loop = count(text)[config.name]
    assert loop.ffma == 16 * 2048 // 16 and loop.ldl <= 2 and loop.stl == 0


@pytest.mark.parametrize("device", ("a100", "h100-pcie", "h200"))
def test_one_config_is_right_on_the_grid_of_each_device(device):
    """The grid follows the device's SMs (108, 114, 132: space.devices): the same config, at an odd shape whose
    k-steps those blocks share unevenly (many blocks with one step or none), is right on each."""
    from autotune.backends.sim.backend import SimBackend
    from autotune.space.devices import PRESETS

    config, limits = streamk({**SMALL, "SKB": 1, "DP": 0}), PRESETS[device]
    backend = SimBackend(67, 45, 300, limits=limits)
    assert config.geometry(67, 45, limits).grid == (limits.sms, 1, 1)
    assert backend.measure(config, render(config)).status == "ok"


def test_load_launches_the_persistent_grid_of_the_calls_device(tmp_path):
    """load()'s matmul sizes a stream-K grid by the device it runs on (the launcher's limits), not the H200's."""
    import autotune
    from autotune import store
    from autotune.space.devices import preset
    from tests.fakes import FakeLauncher
    from tests.test_api import DeviceArray
    from tests.test_dispatch_library import timed

    db = store.open_db(tmp_path / "r.sqlite")
    shape = (512, 512, 65536)
    timed(db, shape, "streamk", 0.5, 0.7)
    db.close()
    a100 = preset("a100")
    launcher = FakeLauncher(a100)
    mm = autotune.load(db=str(tmp_path / "r.sqlite"), launcher=launcher, library=False)
    M, N, K = shape
    mm(DeviceArray((M, K), 1 << 40), DeviceArray((K, N), 2 << 40), out=DeviceArray((M, N), 3 << 40))  # apart
    config = mm.choose(*shape).config
    assert config is not None and config.family.name == "streamk"
    assert launcher.launches[-1]["launch"].grid[0] == config.values["SKB"] * a100.sms == config.values["SKB"] * 108
