"""The tf32x3wg family (3xTF32 on Hopper's warpgroup MMA, wgmma) without a GPU: on the CPU emulator,
FP32-class error at odd shapes with TERMS=3 (warp-specialized or not, both PIPE variants, several BN
and STAGES, one k-tile, fewer k-tiles than stages, a partial group of GM row-tiles), PIPE=1's and
WS=1's C bit for bit WS=0 PIPE=0's, plain TF32 clearly worse, mutations caught (a dropped correction
term, the workspace's swizzle, the store's lane mapping, the split's small part; WS=1's waits, frees and
announced bytes); the prologue's workspace bit for bit a numpy split, and the kernel lost without it; the emulator's wgmma model against the PTX layouts it documents, its refusal of other
layouts, the shared-memory slack; the launch formulas; and offline SASS of every config (HGMMA, no
local memory, waits that leave a group in flight)."""
from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest

from autotune.backends.reference import random_inputs
from autotune.backends.sim import SimError, run, run_kernel
from autotune.backends.sim.runner import run_flat
from autotune.codegen.nvrtc import ARCH_SPECIFIC, compile_source
from autotune.codegen.render import render
from autotune.errors import AutotuneError
from autotune.families import FAMILIES, TF32X3WG, families_for, precision_of
from autotune.families.tf32x3wg import BK, BM
from autotune.space import (
    PROLOGUE_SUFFIX,
    Config,
    Launch,
    Param,
    ceil_div,
    count_valid,
    make_config,
    valid_configs,
    violations,
)
from autotune.space.formula import GridFormula, derive_formula, derive_prologue
from tests.emulated import assert_fp32_tc_at, edit, error, plain_tf32

# K % 4 != 0 (the split's 4-byte path: 93, 9, 1) and == 0 (its float4 path: 100, 40; the emulator's
# buffers start on 16 bytes); one k-tile (K = 1, 9), two (40: fewer than STAGES 3 or 4), three (93:
# PIPE=1's odd tail), four (100: its even tail); M, N past no tile edge; N = 8 below every BN; and
# 1100 rows: nine row-tiles, a whole group of GM=8 and a partial one.
SHAPES = ((1, 1, 1), (131, 67, 93), (17, 8, 9), (130, 200, 100), (33, 70, 40), (1100, 70, 40))
CONFIGS = (
    {"BN": 64, "STAGES": 2, "PIPE": 0, "WS": 0},
    {"BN": 64, "STAGES": 3, "PIPE": 1, "GM": 1, "WS": 0},
    {"BN": 128, "STAGES": 3, "PIPE": 1, "WS": 0},
    {"BN": 128, "STAGES": 3, "PIPE": 0, "WS": 0},
    {"BN": 128, "STAGES": 2, "PIPE": 0, "GM": 1, "WS": 0},
    {"BN": 192, "STAGES": 2, "PIPE": 0, "WS": 0},
    {"BN": 64, "STAGES": 4, "PIPE": 1, "WS": 0},
    {},  # the default: WS=1, BN=128, 3 stages
    {"BN": 64, "STAGES": 2},  # WS=1 with as many k-tiles as stages at K = 40, fewer at K = 1, 9
    {"BN": 192, "STAGES": 2, "GM": 1},
    {"BN": 64, "STAGES": 4},
)
MUTATION_SHAPE = (130, 200, 100)


def wg(params: dict) -> Config:
    return make_config(TF32X3WG, params)




def product(config: Config, source: str, shape: tuple[int, int, int]) -> np.ndarray:
    M, N, K = shape
    A, B = random_inputs(M, N, K, 1)
    return run(config, source, config.geometry(M, N), A, B, M, N, K)


# --------------------------------------------------------------------------- accuracy on the emulator

@pytest.mark.parametrize("params", CONFIGS, ids=lambda p: wg(p).name)
def test_three_terms_are_as_accurate_as_fp32_at_odd_shapes(params):
    assert_fp32_tc_at(wg({**params, "TERMS": 3}), SHAPES)


@pytest.mark.parametrize("variant", [{"PIPE": 1, "WS": 0}, {"PIPE": 0, "WS": 1}], ids=str)
def test_pipelined_and_specialized_sums_are_the_plain_ones_bit_for_bit(variant):
    # PIPE=1 promotes k-tile kt-1 while k-tile kt's MMAs run, WS=1 has other threads copy the stages: both
    # add the same numbers in the same order as WS=0 PIPE=0
    for shape in ((131, 67, 93), (130, 200, 100)):  # three k-tiles (PIPE's odd tail) and four
        ones = [product(c, render(c), shape) for c in (wg({"BN": 64, "PIPE": 0, "WS": 0}), wg({"BN": 64, **variant}))]
        assert np.array_equal(ones[0], ones[1]), shape


def test_plain_tf32_is_clearly_worse():
    shape = (131, 67, 93)
    _, three = error(wg({"TERMS": 3}), render(wg({"TERMS": 3})), shape)
    status, one = error(*plain_tf32(wg({})), shape)
    assert status == "wrong" and one > 100 * three  # TF32's 10-bit mantissa against ~21 bits


# --------------------------------------------------------------------------- mutations

A_FLOAT4_SMALL = ("make_float4(to_tf32(x.x - big.x), to_tf32(x.y - big.y),\n"
                  "                                                            to_tf32(x.z - big.z), to_tf32(x.w - big.w))")
MUTATIONS = {
    # a correction term dropped from every k-step (PIPE=1's and PIPE=0's text)
    "dropped small*big": ("            wgmma(cur, descriptor(alo + 32 * kk), descriptor(bhi + 32 * kk), 1);\n", ""),
    # the workspace's tiles without the 128-byte swizzle the descriptors name
    "unswizzled workspace": ("((kk / 4 ^ (rr & 7)) << 2)", "((kk / 4) << 2)"),
    # the store's rows and columns from the wrong lane bits (a bijection: every output written, at the wrong place)
    "store lane mapping": ("lane / 4, col0 = (size_t)n0 + 2 * (lane % 4)", "lane % 8, col0 = (size_t)n0 + 2 * (lane / 8)"),
    # the split's small parts dropped (scalar A, B; A's float4 path below)
    "small dropped": ("lo[at] = to_tf32(x - big);", "lo[at] = 0.0f;"),
}


@pytest.mark.parametrize("name", MUTATIONS)
def test_a_mutated_kernel_is_wrong(name):
    config = wg({"BN": 64, "STAGES": 2, "PIPE": 1, "WS": 0})  # the mutations name its text
    source = render(config)
    old, new = MUTATIONS[name]
    mutated = source.replace(old, new)
    assert old in source and mutated != source, "the template changed?"
    if name == "small dropped":
        mutated = edit(mutated, A_FLOAT4_SMALL, "make_float4(0.0f, 0.0f, 0.0f, 0.0f)")
    _, whole = error(config, source, MUTATION_SHAPE)
    status, err = error(config, mutated, MUTATION_SHAPE)
    assert status == "wrong" and err > 100 * whole, name


@pytest.mark.parametrize("ws", [0, 1])
def test_a_dropped_term_of_the_unpipelined_kernel_is_wrong(ws):
    config = wg({"BN": 64, "STAGES": 2, "PIPE": 0, "WS": ws})
    source = render(config)
    dropped = edit(source, "            wgmma(acc, descriptor(ahi + 32 * kk), descriptor(blo + 32 * kk), kk > 0);\n",
                   "")
    assert error(config, source, MUTATION_SHAPE)[0] == "ok"
    assert error(config, dropped, MUTATION_SHAPE)[0] == "wrong"


# WS=1's hand-over of stages, broken. K = 100 is four k-tiles through two stages, so each stage is
# reused: each break below ends with the producer waiting for a phase of a stage's `empty` barrier that
# never completes (a hang on the GPU), which the emulator reports. Without its waits (or with the wrong
# phase) an MMA warpgroup runs ahead and frees a stage twice in one round, past the phase the producer
# waits for: on the GPU it would read stages not yet refilled.
WS_MUTATIONS = {
    "no wait for the stage": ("        mbar_wait(full + 8 * s, (kt / STAGES) & 1);", ""),
    "the wrong phase": ("mbar_wait(full + 8 * s, (kt / STAGES) & 1)", "mbar_wait(full + 8 * s, (kt / STAGES + 1) & 1)"),
    "a stage never freed": ("        if (tid % 32 == 0) mbar_arrive(empty + 8 * s);", ""),
    # the copies' bytes not announced: the phase completes at the arrival, before the copies land, whose
    # completions then leave the next phase short of bytes forever
    "bytes not announced": ("mbar_arrive_expect(bar, STAGE_BYTES);", "mbar_arrive(bar);"),
}


@pytest.mark.parametrize("name", WS_MUTATIONS)
def test_a_broken_hand_over_of_stages_is_caught(name):
    config = wg({"BN": 64, "STAGES": 2})
    source = render(config)
    mutated = edit(source, *WS_MUTATIONS[name])
    assert error(config, source, MUTATION_SHAPE)[0] == "ok"
    assert error(config, mutated, MUTATION_SHAPE)[0] == "barrier"  # what a search records
    with pytest.raises(SimError, match="spin at an mbarrier wait whose phase never completes"):
        product(config, mutated, MUTATION_SHAPE)


# --------------------------------------------------------------------------- the prologue's workspace

def tf32(x: np.ndarray) -> np.ndarray:
    """cvt.rna.tf32.f32 in numpy: half a TF32 unit added to the bits of finite values, the low 13 cleared."""
    u = np.ascontiguousarray(x, np.float32).view(np.uint32).copy()
    u[np.isfinite(x)] += np.uint32(0x1000)
    return (u & np.uint32(0xFFFFE000)).view(np.float32)


def stage_tiles(x: np.ndarray, rows: int) -> np.ndarray:
    """A part (Rp x Kp) as the product's stages hold it: tiles of `rows` x 32, row-tiles outer, k-tiles
    inner, each tile's row r with its 16-byte chunk c at chunk c ^ (r % 8)."""
    Rp, Kp = x.shape
    tiles = x.reshape(Rp // rows, rows, Kp // BK, BK // 4, 4).transpose(0, 2, 1, 3, 4)  # [rt][kt][r][c][4]
    swizzled = np.empty_like(tiles)
    for r in range(rows):
        for c in range(BK // 4):
            swizzled[:, :, r, c ^ (r % 8)] = tiles[:, :, r, c]
    return swizzled.ravel()


def split_model(A: np.ndarray, B: np.ndarray, bn: int) -> np.ndarray:
    """The workspace the prologue must write: [A big][A small][B^T big][B^T small], padded with zeros,
    each part in stage tiles."""
    (M, K), N = A.shape, B.shape[1]
    Mp, Np, Kp = ceil_div(M, BM) * BM, ceil_div(N, bn) * bn, ceil_div(K, BK) * BK
    a = np.zeros((Mp, Kp), np.float32)
    b = np.zeros((Np, Kp), np.float32)
    a[:M, :K], b[:N, :K] = A, B.T
    parts = []
    for x, rows in ((a, BM), (b, bn)):
        big = tf32(x)
        parts += [stage_tiles(big, rows), stage_tiles(tf32(x - big), rows)]
    return np.concatenate(parts)


def workspace(config: Config, source: str, shape: tuple[int, int, int]) -> tuple[np.ndarray, np.ndarray]:
    M, N, K = shape
    A, B = random_inputs(M, N, K, 1)
    pre = config.prologue(M, N, K)
    W = run_flat(source, config.name + PROLOGUE_SUFFIX, pre.launch, M, N, K, A, B, pre.floats)
    return W, split_model(A, B, config.values["BN"])


@pytest.mark.parametrize("shape", [(131, 67, 93), (130, 200, 100), (1, 1, 1), (33, 70, 40)])
def test_the_prologue_writes_the_split_bit_for_bit(shape):
    # K % 4 != 0: the scalar path; K % 4 == 0 (the emulator's A starts on 16 bytes): the float4 path
    config = wg({"BN": 64})
    W, want = workspace(config, render(config), shape)
    assert W.size == want.size and np.array_equal(W.view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("path, old, new, shape", [
    ("scalar", "lo[at] = to_tf32(x - big);", "lo[at] = x - big;", (131, 67, 93)),  # small truncated (A's and B's)
    ("float4", A_FLOAT4_SMALL, "make_float4(x.x - big.x, x.y - big.y, x.z - big.z, x.w - big.w)", (130, 200, 100)),
    ("float4", "reinterpret_cast<float4*>(hi)[at] = big;", "", (130, 200, 100)),  # A's big never written
])
def test_a_split_without_rounding_to_nearest_differs(path, old, new, shape):
    config = wg({"BN": 64})
    source = render(config)
    assert old in source, "the template changed?"
    W, want = workspace(config, source.replace(old, new), shape)
    assert not np.array_equal(W.view(np.uint32), want.view(np.uint32)), path


def test_the_kernel_without_its_prologue_is_wrong():
    # the product alone, on a NaN workspace (what an unrun prologue leaves): every output NaN
    config = wg({})
    M, N, K = 33, 70, 40
    A, _ = random_inputs(M, N, K, 1)
    W = np.full(config.prologue(M, N, K).floats, np.nan, np.float32)
    C = run_flat(render(config), config.name, config.geometry(M, N), M, N, K, A, W, M * N)
    assert np.isnan(C).all()
    lost = dataclasses.replace(TF32X3WG, prologue=lambda p, M, N, K: None)  # the launchers forgot it: B as W
    alone = make_config(lost, dict(config.params))
    assert not alone.has_prologue and error(alone, render(config), (33, 70, 40))[0] != "ok"  # wrong, or past B


# --------------------------------------------------------------------------- the emulator's model

PROBE = r"""
__device__ unsigned long long probe_descriptor(unsigned addr, unsigned long long swizzle)
{
    return (unsigned long long)((addr & 0x3FFFF) >> 4) | (1ull << 16) | (64ull << 32) | (swizzle << 62);
}

// One warpgroup: A (64 x 8, row-major) and B (8 x N, row-major) written into shared memory K-major at
// the PTX ISA's 128-byte-swizzled addresses, one wgmma m64nNk8 onto NaN (scale-d 0) and a second onto
// its result (scale-d 1), the N/2 accumulators of each thread stored where the D fragment layout puts
// them: C = 2 * A*B. SWIZZLE is the descriptor's mode (1: 128-byte).
extern "C" __global__ void probe(const float* A, const float* B, float* C, int M, int N, int K)
{
    extern __shared__ float4 smem4[];
    const unsigned base = (static_cast<unsigned>(__cvta_generic_to_shared(smem4)) + 1023u) & ~1023u;
    const unsigned a = base, b = base + 64 * 128;
    for (int i = threadIdx.x; i < (64 + N) * 8; i += blockDim.x) {
        const bool isA = i < 64 * 8;
        const int r = (isA ? i : i - 64 * 8) / 8, k = i % 8;  // row r of A, or column r of B
        const unsigned logical = (isA ? a : b) + r / 8 * 1024 + r % 8 * 128 + 4 * k;
        *static_cast<float*>(__sim_shared_at(logical ^ (((logical >> 7) & 7) << 4), 4)) = isA ? A[r * 8 + k] : B[k * N + r];
    }
    __syncthreads();
    float d[128];
    for (int i = 0; i < 128; ++i) d[i] = __uint_as_float(0x7fc00000u);
    __sim_wgmma_tf32(d, N, probe_descriptor(a, SWIZZLE), probe_descriptor(b, SWIZZLE), false);
    __sim_wgmma_tf32(d, N, probe_descriptor(a, SWIZZLE), probe_descriptor(b, SWIZZLE), true);
    const int t = threadIdx.x, w = t / 32, g = t % 32 / 4, q = t % 4;
    for (int j = 0; j < N / 8; ++j)
        for (int h = 0; h < 2; ++h)
            for (int c = 0; c < 2; ++c) C[(16 * w + g + 8 * h) * N + 8 * j + 2 * q + c] = d[4 * j + 2 * h + c];
}
"""


def probe(N: int, A: np.ndarray, B: np.ndarray, swizzle: int = 1, slack: int = 1024) -> np.ndarray:
    launch = Launch(grid=(1, 1, 1), block=(128, 1, 1), shared_bytes=(64 + N) * 128 + slack)
    return run_kernel(f"#define SWIZZLE {swizzle}ull\n" + PROBE, "probe", launch, A, B, 64, N, 8)


@pytest.mark.parametrize("N", [8, 64, 256])
def test_the_wgmma_model_follows_the_ptx_layouts(N):
    rng = np.random.default_rng(N)
    A = rng.integers(-8, 9, (64, 8)).astype(np.float32)  # small integers: every sum exact in FP32
    B = rng.integers(-8, 9, (8, N)).astype(np.float32)
    A[0, 0] = np.float32(1 + 2.0**-12)  # not a TF32 value: the tensor core reads its TF32 bits, 1
    C = probe(N, A, B)
    assert np.array_equal(C, 2 * (tf32_bits(A).astype(np.float64) @ B))


def tf32_bits(x: np.ndarray) -> np.ndarray:
    return (np.ascontiguousarray(x, np.float32).view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)


def test_the_wgmma_model_refuses_other_layouts():
    A, B = np.ones((64, 8), np.float32), np.ones((8, 64), np.float32)
    assert np.array_equal(probe(64, A, B), np.full((64, 64), 16.0))
    with pytest.raises(SimError, match=r"wgmma descriptor of A .* swizzle mode 2"):
        probe(64, A, B, swizzle=2)  # 64-byte swizzle: not modelled, so not computed as if it were 128-byte


def test_rounding_the_shared_base_up_needs_the_slack():
    # the emulator's dynamic shared memory starts 16 bytes past a 1024-byte boundary (the worst a GPU may do)
    A, B = np.ones((64, 8), np.float32), np.ones((8, 64), np.float32)
    assert np.array_equal(probe(64, A, B, slack=1008), np.full((64, 64), 16.0))
    with pytest.raises(SimError, match="outside the dynamic shared memory"):
        probe(64, A, B, slack=1007)
    config = wg({"BN": 64, "STAGES": 2})
    M, N, K = 33, 70, 40
    A, B = random_inputs(M, N, K, 1)
    launch = config.geometry(M, N)
    W = run_flat(render(config), config.name + PROLOGUE_SUFFIX, config.prologue(M, N, K).launch, M, N, K, A, B,
                 config.prologue(M, N, K).floats)
    short = dataclasses.replace(launch, shared_bytes=launch.shared_bytes - 1024)
    with pytest.raises(SimError, match="outside the dynamic shared memory"):
        run_flat(render(config), config.name, short, M, N, K, A, W, M * N)


# --------------------------------------------------------------------------- the space and its formulas

def test_the_space():
    # 22 with WS=0, 12 with WS=1 (PIPE=0); TERMS=3 only (PLAIN_TF32)
    assert count_valid(TF32X3WG) == 34 == len(valid_configs(TF32X3WG))
    assert violations(wg({})) == [] and wg({}).name == "sgemm_tf32x3wg_BN128_S3_X3_PI0_GM8_WS1"
    cases = {
        "accumulators and sums": {"BN": 192, "PIPE": 1, "STAGES": 2, "WS": 0},
        "per-block limit": {"BN": 128, "STAGES": 4},
        "WS=1 runs PIPE=0's": {"BN": 64, "PIPE": 1, "WS": 1},
    }
    for reason, params in cases.items():
        assert any(reason in v for v in violations(wg(params))), (reason, params)
    assert not violations(wg({"BN": 192, "PIPE": 0, "STAGES": 2}))
    # the rules no value of BN breaks today, for a BN that would
    wide = dataclasses.replace(TF32X3WG, params=tuple(
        Param("BN", (40, 96, 100, 264), 96, "") if p.name == "BN" else p for p in TF32X3WG.params))
    for bn, reason in ((100, "multiple of 8"), (264, "at most 256"), (40, "copy whole rows")):
        assert any(reason in v for v in violations(make_config(wide, {"BN": bn}))), bn
    assert not violations(make_config(wide, {"BN": 96}))


def test_the_family_is_a_tensor_core_one():
    assert "tf32x3wg" in FAMILIES and precision_of("tf32x3wg") == "fp32-tc"
    assert "tf32x3wg" not in families_for("fp32") and "tf32x3wg" in families_for("fp32-tc")


SHAPE_GRID = ((1, 1, 1), (131, 67, 93), (4097, 4095, 4093), (2**31 - 1, 1, 1), (1, 2**31 - 1, 1), (1, 1, 2**31 - 1),
              (46340, 46340, 1), (1, 46340, 46340))


@pytest.mark.parametrize("params", [{"BN": 64}, {"BN": 128, "WS": 0}, {"BN": 192, "STAGES": 2}], ids=str)
def test_the_launchers_formulas_are_the_familys_launches(params):
    config = wg(params)
    grid, pre = derive_formula(config), derive_prologue(config)
    assert isinstance(grid, GridFormula) and pre is not None and pre.block == (256, 1, 1)
    bn, threads = config.values["BN"], 128 * (2 + config.values["WS"])  # WS=1: the producer warpgroup too
    for M, N, K in SHAPE_GRID:
        launch, prologue = config.geometry(M, N), config.prologue(M, N, K)
        assert grid.evaluate(M, N) == (launch.grid, True) and grid.block == launch.block == (threads, 1, 1)
        assert grid.shared_bytes == launch.shared_bytes
        assert pre.evaluate(M, N, K) == (prologue.launch.grid[0], prologue.floats)
        Mp, Np, Kp = ceil_div(M, BM) * BM, ceil_div(N, bn) * bn, ceil_div(K, BK) * BK
        assert prologue.floats == 2 * (Mp + Np) * Kp  # A big, A small, B big, B small
        assert prologue.launch.grid[0] == (Mp + Np) // 32 * (Kp // 32) < 2**31  # one 32 x 32 tile a block
        assert launch.grid[0] == Mp // BM * (Np // bn) < 2**31


# --------------------------------------------------------------------------- offline SASS

def sass_or_skip():
    from autotune.explain import sass

    try:
        sass.find_nvdisasm()
    except AutotuneError as exc:
        pytest.skip(str(exc))
    return sass


def test_the_default_compiles_for_sm_90a_only():
    config = wg({})
    source = render(config)
    assert source.count(ARCH_SPECIFIC) == 1
    built = compile_source(source, config.name, "sm_90")
    assert built.ok and built.arch == "sm_90a", built.log
    assert b"-arch sm_90a" in built.cubin  # ptxas's command line, in the cubin's tool note
    plain = compile_source(source.replace(ARCH_SPECIFIC, "// (marker removed)"), config.name, "sm_90")
    assert not plain.ok and "wgmma" in plain.log  # sm_90 without the a: no warpgroup MMA


def kernel_text(text: str, kernel: str) -> str:
    body = text[text.index(f".text.{kernel}:"):]
    return body[:body.find("//----")] if "//----" in body else body


# Every config at GM=8 (34), and the default at GM=1: GM changes only the block's tile indices, before the
# k-loop (all 68 compile alike: about 1.5 s each, so the others are left to `autotune sass`)
SASS_CONFIGS = [c for c in valid_configs(TF32X3WG) if c.values["GM"] == 8] + [make_config(TF32X3WG, {"GM": 1})]


@pytest.mark.parametrize("config", SASS_CONFIGS, ids=lambda c: c.name)
def test_every_config_issues_warpgroup_mmas_from_registers(config):
    """The product: HGMMA of its BN only, a k-tile's 4*TERMS per copy of the k-tile's code (PIPE=1 has
    four: the first k-tile, the loop unrolled by two, the tail), no local memory; PIPE=1 waits with one
    group left in flight (not serialized: ptxas's C7514 would wait for each); WS=1 copies with the copy
    engine (four bulk copies a stage), waits on mbarriers and moves registers to the MMA warpgroups.
    The split: no local memory, and 128-bit loads and stores on its float4 path."""
    sass = sass_or_skip()
    built = compile_source(render(config), config.name, "sm_90")
    assert built.ok, built.log
    text = sass.disassemble(built.cubin)
    own, pre = kernel_text(text, config.name), kernel_text(text, config.name + PROLOGUE_SUFFIX)
    p = config.values
    mmas = re.findall(r"HGMMA\.64x(\d+)x8\.F32\.TF32", own)
    assert set(mmas) == {str(p["BN"])} and len(mmas) == 4 * p["TERMS"] * (4 if p["PIPE"] else 1)
    for body in (own, pre):
        assert "LDL" not in body and "STL" not in body
    waits = re.findall(r"WARPGROUP\.DEPBAR\.LE gsb0, (0x\d+)", own)
    assert waits == (["0x1"] * 4 + ["0x0"] * 2 if p["PIPE"] else ["0x0"]), waits
    assert "LDG.E.128" in pre and "STG.E.128" in pre
    bulk, reg_moves = len(re.findall(r"UBLKCP\.S\.G", own)), len(re.findall(r"USETMAXREG", own))
    assert (bulk, reg_moves, "TRYWAIT" in own) == ((4, 2, True) if p["WS"] else (0, 0, False))
    used = sass.resources(built.cubin, config.name, text)
    assert used.registers <= 255 and used.frame_bytes == 0
