"""The emulator computes every family correctly, and verify's pieces do what they say."""
from __future__ import annotations

import numpy as np
import pytest

from autotune.backends.sim import SimError, run, run_kernel
from autotune.backends.verify import (
    SHAPES,
    TOLERANCE,
    check,
    possible_pairs,
    reference,
    relative_error,
    sample_configs,
    verify_configs,
)
from autotune.codegen.render import render
from autotune.families import FAMILIES
from autotune.space import Launch, Limits, make_config, on_device

SAMPLE = 12  # per family: enough to cover every value of every parameter




# splitk and skinny have their own odd-shape, same-bytes and mutation tests (tests/test_splitk.py), tall too
# (tests/test_tall.py)
@pytest.mark.parametrize("family", ["blocked", "naive", "tiled"])
def test_every_family_matches_reference(family: str) -> None:
    configs = sample_configs(FAMILIES[family], SAMPLE, seed=0)
    rows = verify_configs(configs, SHAPES, run)
    bad = [r for r in rows if r.status != "ok"]
    assert not bad, "\n".join(f"{r.config} {r.shape}: {r.status} {r.reason}" for r in bad)
    assert len(rows) == len(configs) * len(SHAPES)
    assert all(r.error <= TOLERANCE for r in rows)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_sample_covers_every_value(family: str) -> None:
    # the values a search on the emulator's device walks (tailsplit's WAVE: the H200's waves, not every preset's)
    fam = on_device(FAMILIES[family], Limits())
    sample = sample_configs(fam, SAMPLE, seed=0)
    possible = possible_pairs(fam)
    assert {pair for c in sample for pair in c.params} == possible
    assert len(sample) == SAMPLE and len({c.name for c in sample}) == SAMPLE
    assert [c.name for c in sample] == [c.name for c in sample_configs(fam, SAMPLE, seed=0)]
    assert len(sample_configs(fam, 3, seed=0)) == 3  # a small limit is respected


def test_unwritten_outputs_are_nan() -> None:
    config = make_config(FAMILIES["naive"], {"bx": 8, "by": 8})
    lazy = render(config).replace("C[row * N + col] = acc;", "if (row == 0) C[col] = acc;")
    M, N, K = 5, 7, 3
    C = run_kernel(lazy, config.name, config.geometry(M, N), np.ones((M, K)), np.ones((K, N)), M, N, K)
    assert C.dtype == np.float32 and C.shape == (M, N)
    assert np.all(C[0] == 3.0) and np.all(np.isnan(C[1:]))


def test_relative_error() -> None:
    ref = np.array([[3.0, 4.0]])
    assert relative_error(ref.astype(np.float32), ref) == 0.0
    assert relative_error(np.array([[3.0, 4.5]]), ref) == pytest.approx(0.1)
    assert relative_error(np.array([[np.nan, 4.0]]), ref) == float("inf")
    assert relative_error(np.zeros((2, 1)), ref) == float("inf")  # wrong shape
    assert reference(np.ones((2, 3), np.float32), np.ones((3, 1), np.float32)).dtype == np.float64


def test_shapes_exercise_every_tail() -> None:
    assert (1, 1, 1) in SHAPES
    tiles = {v for f in FAMILIES.values() for p in f.params if p.name in ("T", "bx", "by") for v in p.values}
    # some shape is a non-multiple of every tile edge and block size above 1, in M, N and K
    for axis in range(3):
        assert all(any(s[axis] % t for s in SHAPES) for t in tiles if t > 1)


def test_sim_error_kinds() -> None:
    err = SimError("barrier", "two\nlines")
    assert err.kind == "barrier" and str(err) == "barrier: two lines"
    with pytest.raises(ValueError):
        SimError("segfault", "not a kind")


# A hand-written kernel (no family uses dynamic shared memory yet): each block stages one
# row of A in extern __shared__ memory sized by the launch, then computes that row of C.
DYNAMIC = """
extern "C" __global__ void dyn(const float* A, const float* B, float* C, int M, int N, int K)
{
    extern __shared__ __align__(16) float arow[];
    const int r = blockIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;
    for (int k = threadIdx.x; k < K; k += blockDim.x) arow[k] = A[r * K + k];
    __syncthreads();
    if (c >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += arow[k] * B[k * N + c];
    C[r * N + c] = acc;
}
"""


def _dynamic(source: str, shared_floats: int) -> np.ndarray:
    M, N, K = 9, 40, 37
    rng = np.random.default_rng(0)
    A, B = rng.uniform(-1, 1, (M, K)), rng.uniform(-1, 1, (K, N))
    launch = Launch(grid=((N + 31) // 32, M, 1), block=(32, 1, 1), shared_bytes=4 * shared_floats)
    C = run_kernel(source, "dyn", launch, A, B, M, N, K)
    return relative_error(C, reference(A, B))


def test_dynamic_shared_memory() -> None:
    assert _dynamic(DYNAMIC, 37) <= TOLERANCE
    # each block starts with NaN there, so a word never written shows in C
    assert _dynamic(DYNAMIC.replace("k < K; k += blockDim.x", "k < K - 1; k += blockDim.x"), 37) == float("inf")
    with pytest.raises(SimError) as caught:
        _dynamic(DYNAMIC, 36)  # one float short of what the kernel uses
    assert caught.value.kind == "out_of_bounds" and "dynamic __shared__ memory" in str(caught.value)


@pytest.mark.parametrize("order", [1, 2, 3])
def test_fma_order_changes_the_instructions_not_the_sums(order: int) -> None:
    """Each accumulator still adds its products in k order, so every ORDER's bytes are ORDER=0's, at a
    shape with interior and edge tiles."""
    M, N, K = 130, 257, 35
    rng = np.random.default_rng(3)
    A, B = rng.uniform(-1, 1, (M, K)).astype(np.float32), rng.uniform(-1, 1, (K, N)).astype(np.float32)
    out = []
    for value in (0, order):
        config = make_config(FAMILIES["blocked"], {"ORDER": value})
        out.append(run_kernel(render(config), config.name, config.geometry(M, N), A, B, M, N, K))
    assert relative_error(out[1], reference(A, B)) <= TOLERANCE
    assert np.array_equal(out[0], out[1])


@pytest.mark.parametrize("family", ["blocked", "tailsplit"])
@pytest.mark.parametrize("loading", [{"ASYNC": 0, "STAGES": 2}, {"ASYNC": 1, "STAGES": 2}, {"ASYNC": 1, "STAGES": 4}])
def test_early_barrier_moves_the_barrier_not_the_sums(family: str, loading: dict[str, int]) -> None:
    """EARLY=1 reads the next tile's first fragments before a tile's last FMAs: the same products, added in
    the same order, so its bytes are EARLY=0's, over interior and edge tiles and K of several tiles (the
    tail split's two pieces a tile: five tiles of K each)."""
    M, N, K = 130, 257, 75
    rng = np.random.default_rng(4)
    A, B = rng.uniform(-1, 1, (M, K)).astype(np.float32), rng.uniform(-1, 1, (K, N)).astype(np.float32)
    out = []
    for early in (0, 1):
        pieces = {"MAXS": 2} if family == "tailsplit" else {}
        config = make_config(FAMILIES[family], {"EARLY": early, "BK": 8, **loading, **pieces})
        out.append(run_kernel(render(config), config.name, config.geometry(M, N), A, B, M, N, K))
    assert relative_error(out[1], reference(A, B)) <= TOLERANCE
    assert np.array_equal(out[0], out[1])


@pytest.mark.parametrize("bswap", [0, 1])
def test_blocked_interior_and_edge_tiles(bswap: int) -> None:
    """The default blocked tile (128x256, BK=16) at shapes with whole interior tiles, where loads
    take the one-pointer fast path, beside edge tiles that take the guarded one; K % 4 != 0 and
    N % 4 != 0 turn the float4 path off entirely."""
    config = make_config(FAMILIES["blocked"], {"BSWAP": bswap})
    source = render(config)
    for shape in ((200, 300, 40), (130, 257, 35)):
        row = check(config, source, shape, run)
        assert row.status == "ok" and row.error <= TOLERANCE, (shape, row.status, row.reason)
