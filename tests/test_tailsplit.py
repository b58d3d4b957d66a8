"""The tail-split family on the CPU emulator: right at odd shapes, the same bytes every run, broken
piece sums caught; the block-to-work partition, the pieces rule (the kernel's copy run against
Python's) and the model."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from autotune.backends.reference import random_inputs
from autotune.backends.sim import run, run_kernel
from autotune.backends.verify import check
from autotune.codegen.render import render
from autotune.explain.model import PRESETS, predict
from autotune.explain.sass import SassCounts
from autotune.families import BLOCKED, FAMILIES
from autotune.families.chunked import chunked_constraints
from autotune.families.tailsplit import MAXSES, TAILSPLIT, WAVES, block_work, blocks, pieces, tiles
from autotune.space import Config, Launch, make_config, violations

# WAVE is the GPU's blocks at once (hundreds); the emulator's shapes have a few tiles, so the tests
# use the same family with small waves, which split the last few of 9 tiles (70 x 70, 32 x 32 tiles).
SMALL_WAVES = replace(TAILSPLIT, params=tuple(replace(p, values=(2, 3, 4, 5)) if p.name == "WAVE" else p
                                              for p in TAILSPLIT.params))
SMALL = {"BM": 32, "BN": 32, "WM": 32, "WN": 16, "WNITER": 1, "TM": 4, "TN": 4}
# Odd shapes: M, N not multiples of the tile, K not a multiple of BK, K = 9 (some pieces' chunks
# empty), M or N of 1, several tiles both ways with whole waves and a tail.
SHAPES = ((17, 33, 9), (1, 40, 300), (5, 1, 77), (70, 70, 333), (70, 70, 9))
CONFIGS = (
    {**SMALL, "WAVE": 4},  # 9 tiles: 8 whole, the ninth in 4 pieces
    {**SMALL, "WAVE": 5, "GM": 8, "STAGES": 1, "BK": 8},  # 4 tail tiles of 5 pieces, block-rows grouped
    {**SMALL, "WAVE": 2, "ASYNC": 1, "STAGES": 3, "BSWAP": 0},
    # A and B copied first into a workspace padded to whole tiles (rows not 16-byte aligned: K, N odd)
    {**SMALL, "WAVE": 4, "AL": 2},
    {**SMALL, "WAVE": 2, "ASYNC": 1, "STAGES": 3, "BSWAP": 0, "AL": 2},
)
MUTATION_SHAPE = (70, 70, 333)


def small(params: dict) -> Config:
    return make_config(SMALL_WAVES, params)


def statuses(config: Config, source: str, shapes=SHAPES) -> list[str]:
    runner = lambda cfg, _src, *rest: run(cfg, source, *rest)  # noqa: E731  (the given source)
    return [check(config, source, shape, runner, seed=1).status for shape in shapes]


def output(config: Config, source: str, shape: tuple[int, int, int], A=None, B=None) -> np.ndarray:
    M, N, K = shape
    if A is None:
        A, B = random_inputs(M, N, K, 3)
    return run_kernel(source, config.name, config.geometry(M, N), A, B, M, N, K)


def edit(source: str, old: str, new: str) -> str:
    assert source.count(old) >= 1, f"{old!r} is not in the source; the template changed?"
    return source.replace(old, new)


@pytest.mark.parametrize("params", CONFIGS, ids=lambda p: ",".join(f"{k}={v}" for k, v in p.items() if k not in SMALL))
def test_tailsplit_matches_the_reference_at_odd_shapes(params):
    config = small(params)
    assert statuses(config, render(config)) == ["ok"] * len(SHAPES)


def test_the_default_matches_the_reference_with_its_one_tile_in_sixteen_pieces():
    """The real WAVE=132: 70 x 70 is one 128 x 256 tile, split 16 ways, 5 of them past K = 333."""
    config = make_config(TAILSPLIT, {})
    assert blocks(config.values, 70, 70) == 16
    assert statuses(config, render(config), ((70, 70, 333),)) == ["ok"]


def test_every_k_step_is_added_exactly_once():
    """A and B all ones: every element of C is exactly K (a step lost or added twice is off by BK)."""
    config = small({**SMALL, "WAVE": 5, "BK": 8, "STAGES": 1})
    M, N, K = 70, 70, 37  # 4 tail tiles of 5 pieces of 8 steps of K: the last partial, one empty
    C = output(config, render(config), (M, N, K), np.ones((M, K)), np.ones((K, N)))
    assert np.array_equal(C, np.full((M, N), K, dtype=np.float32))


def test_tailsplit_gives_the_same_bytes_every_run():
    config = small({**SMALL, "WAVE": 5})
    first, second = (output(config, render(config), MUTATION_SHAPE) for _ in range(2))
    assert first.tobytes() == second.tobytes()


# --------------------------------------------------------------------------- mutations

def test_a_dropped_tail_piece_is_wrong():
    """Piece 1 of each tail tile adds zeros (it still takes its turn): the output misses its chunk of K."""
    config = small({**SMALL, "WAVE": 4})
    source = render(config)
    assert statuses(config, source, (MUTATION_SHAPE,)) == ["ok"]
    broken = edit(source, "const bool add = PIECE && piece > 0;",
                  "const bool add = PIECE && piece > 0;\n    if (piece == 1) for (auto& row : acc) for (float& x : row) x = 0.0f;")
    assert statuses(config, broken, (MUTATION_SHAPE,)) == ["wrong"]


def test_pieces_reading_b_at_its_stored_row_length_in_the_padded_workspace_are_wrong():
    config = small({**SMALL, "WAVE": 4, "AL": 2})
    source = edit(render(config), "B += kBegin * Np;", "B += kBegin * N;")
    assert statuses(config, source, (MUTATION_SHAPE,)) == ["wrong"]


def test_pieces_storing_instead_of_adding_are_wrong():
    config = small({**SMALL, "WAVE": 4})
    broken = edit(render(config), "const bool add = PIECE && piece > 0;", "const bool add = false;")
    assert statuses(config, broken, (MUTATION_SHAPE,)) == ["wrong"]


# --------------------------------------------------------------------------- the partition

@pytest.mark.parametrize("wave", (2, 3, 4, 5, *WAVES))
def test_every_tile_is_one_block_or_its_pieces_in_order(wave):
    """Each tile is covered once: by one block of a whole wave, or by pieces 0 .. S-1 of the last
    wave, piece-major: piece p of the u-th tail tile is block whole + p * rest + u (a piece's
    predecessors come first, and a tile's pieces lie `rest` blocks apart, in successive rounds)."""
    for M, N in ((70, 70), (1, 1), (4096, 4096), (8192, 8192), (4000, 4000), (4097, 4095), (1024, 1024)):
        p = {**make_config(BLOCKED, {}).values, "WAVE": wave, "MAXS": 16}
        t, rest = tiles(p, M, N), tiles(p, M, N) % wave
        covered: dict[int, list[tuple[int, int, int]]] = {}
        for b in range(blocks(p, M, N)):
            tile, piece, s = block_work(p, M, N, b)
            covered.setdefault(tile, []).append((b, piece, s))
        assert sorted(covered) == list(range(t))
        for tile, mine in covered.items():
            first, s = mine[0][0], mine[0][2]
            assert mine == [(first + i * rest, i, s) for i in range(s)]
            assert s == (1 if tile < t - rest else pieces(rest, wave, 16))
        assert blocks(p, M, N) == t - rest + rest * pieces(rest, wave, 16)


def test_the_pieces_fill_the_last_wave_never_slower_than_unsplit():
    for wave in WAVES:
        for maxs in MAXSES:
            for rest in range(1, wave):
                s = pieces(rest, wave, maxs)
                assert 1 <= s <= maxs
                tail = -(-rest * s // wave) / s  # the tail's time in tiles: rounds of 1/s of a tile
                assert rest / wave <= tail <= 1
                assert all(tail <= -(-rest * other // wave) / other for other in range(1, maxs + 1))
    assert pieces(0, 132, 16) == 1
    assert pieces(116, 132, 16) == 9  # 4096^3, 128 x 256 tiles: 8 rounds of a ninth, not 1 round of a whole
    assert pieces(116, 132, 8) == 1  # ... which a cap of 8 forbids: no split
    assert pieces(10, 132, 16) == 13  # a thin last wave: WAVE // rest pieces fill it in one round
    assert pieces(10, 132, 4) == 4
    assert blocks(make_config(TAILSPLIT, {}).values, 4096, 4096) == 396 + 116 * 9


def test_the_kernels_pieces_rule_is_pythons():
    """The kernel computes the pieces itself (its signature has no room for them): its
    tail_pieces, run for every rest of a real wave, must size the grid as Python does."""
    probe = ('\nextern "C" __global__ void probe(const float* A, const float* B, float* C, int M, int N, int K)\n'
             "{\n    for (int rest = 0; rest < N; ++rest) C[rest] = tail_pieces(rest);\n}\n")
    wave = TAILSPLIT.param("WAVE").default
    source = render(make_config(TAILSPLIT, {})) + probe
    C = run_kernel(source, "probe", Launch((1, 1, 1), (1, 1, 1)), np.zeros((1, 1)), np.zeros((1, wave)), 1, wave, 1)
    assert C[0].astype(int).tolist() == [pieces(rest, wave, 16) for rest in range(wave)]


# --------------------------------------------------------------------------- space, names, model

def test_tailsplit_is_the_blocked_space_times_the_wave():
    # all of blocked's but BLAS (the turnstiles are per tile, not per (batch, tile)) and CS (its pieces add into C)
    assert [p.name for p in TAILSPLIT.params] == [p.name for p in BLOCKED.params if p.name not in ("BLAS", "CS")] + \
        ["WAVE", "MAXS"]
    assert TAILSPLIT.constraints == chunked_constraints(BLOCKED.constraints) and TAILSPLIT.template == BLOCKED.template
    assert TAILSPLIT.param("PB").values == (0,)
    assert FAMILIES["tailsplit"] is TAILSPLIT and not violations(make_config(TAILSPLIT, {}))
    assert make_config(TAILSPLIT, {"WAVE": 264}).name.endswith("_WV264_MS16")
    assert make_config(TAILSPLIT, {"GM": 8}).geometry(4096, 4096).grid == (1440, 1, 1)


def test_the_model_sees_the_blocked_kernel_it_is():
    counts = SassCounts(scope="loop", ffma=16 * 128, lds={128: 16 * 6})
    ours, theirs = make_config(TAILSPLIT, {}), make_config(BLOCKED, {})
    h200 = PRESETS["h200"]
    a = predict(h200, counts, ours.geometry(4096, 4096), 128, 0, ours)
    b = predict(h200, counts, theirs.geometry(4096, 4096), 128, 0, theirs)
    assert (a.predicted, a.binding, a.intensity, a.occupancy) == (b.predicted, b.binding, b.intensity, b.occupancy)


def test_the_launchers_copy_of_the_pieces_rule_is_pythons():
    """The exported launchers compute the grid at any shape through a Python (and C) copy of
    pieces() (space.expr.Helper); the Python text, for every rest of every WAVE and MAXS."""
    from autotune.families.tailsplit import MAXSES, WAVES, _helper

    for wave in WAVES:
        for maxs in MAXSES:
            helper, scope = _helper(wave, maxs), {}
            exec(helper.python, scope)  # noqa: S102 - our own text
            copy = scope[helper.name]
            assert [copy(rest) for rest in range(wave)] == [pieces(rest, wave, maxs) for rest in range(wave)]
