"""SCALE=1 in the ozaki and ozakiwg kernels (their shared prologue, templates/_ozaki.cu.j2): each row of A and
column of B scaled by its norm, as ozaki_math.norm_shifts does. On the CPU emulator C is the reference's bit for
bit at odd shapes and extreme magnitudes, where Cauchy-Schwarz is nearly an equality, and where the rounding's
slack decides a shift; the prologue's shifts are the reference's, rows and columns built to sit on the bound's
edge included (where rounding the squares up, or ceil(sqrt(K)), decides); mutations are caught (A's lanes' sums
not added, B's warps' sums not added, the slack left out or cut, squares rounded down, a shift one larger);
offline, the prologue keeps to registers."""
from __future__ import annotations

import math

import numpy as np
import pytest

from autotune.backends.reference import random_inputs
from autotune.backends.sim import run
from autotune.backends.sim.runner import run_flat
from autotune.codegen.render import render
from autotune.families import OZAKI, OZAKIWG, ozaki_math
from autotune.families.ozakiwg import BK, BM
from autotune.space import PROLOGUE_SUFFIX, Config, Family, ceil_div, make_config
from tests.emulated import edit, sass_kernels
from tests.test_ozaki_norm import tight

FAMILY_SMALL = {OZAKI.name: {"BM": 64, "BN": 64, "STAGES": 2}, OZAKIWG.name: {"BN": 64, "STAGES": 3}}
SHAPES = ((17, 9, 33), (131, 67, 300), (1, 70, 200), (70, 1, 128), (65, 33, 1100))


def norm_config(family: Family, moduli: int = 7) -> Config:
    return make_config(family, {**FAMILY_SMALL[family.name], "MODULI": moduli, "SCALE": 1})


def product(config: Config, source: str, A: np.ndarray, B: np.ndarray) -> np.ndarray:
    (M, K), N = A.shape, B.shape[1]
    return run(config, source, config.geometry(M, N), A, B, M, N, K)


def reference(config: Config, A: np.ndarray, B: np.ndarray) -> np.ndarray:
    return ozaki_math.ozaki_matmul(A, B, config.values["MODULI"], ozaki_math.SCALE_NORM)


@pytest.mark.parametrize("family", [OZAKI, OZAKIWG], ids=lambda f: f.name)
@pytest.mark.parametrize("moduli", [6, 7, 8])
def test_the_emulated_product_is_the_references_bit_for_bit(family, moduli):
    config = norm_config(family, moduli)
    assert config.name.endswith("_SCALE1")
    source = render(config)
    for M, N, K in SHAPES:
        A, B = random_inputs(M, N, K, 1)
        assert np.array_equal(product(config, source, A, B), reference(config, A, B)), (M, N, K)


@pytest.mark.parametrize("family", [OZAKI, OZAKIWG], ids=lambda f: f.name)
def test_rows_and_columns_of_extreme_magnitude_and_a_zero_row_are_scaled_as_the_reference_scales_them(family):
    config = norm_config(family)
    M, N, K = 19, 23, 300
    A, B = random_inputs(M, N, K, 1)
    A[3] *= np.float32(1e-36)
    A[7] *= np.float32(1e37)
    A[11] = 0.0
    B[:, 5] *= np.float32(1e-36)
    B[:, 9] *= np.float32(1e36)
    A[2, 100] *= 2**20  # one value far above its row's others: the norm is nearly that value alone
    assert np.array_equal(product(config, render(config), A, B), reference(config, A, B))


@pytest.mark.parametrize("family", [OZAKI, OZAKIWG], ids=lambda f: f.name)
def test_the_product_is_exact_where_the_bound_is_nearly_tight_and_a_shift_one_larger_wraps(family):
    config = norm_config(family)
    A, B = tight()
    source = render(config)
    want = reference(config, A, B)
    assert np.array_equal(product(config, source, A, B), want)
    assert np.allclose(want, A.astype(np.float64) @ B.astype(np.float64), rtol=1e-6)
    larger = edit(source, "    return u + NORM_UNIT - 1 - e;", "    return u + NORM_UNIT - e;")
    assert not np.allclose(product(config, larger, A, B), want, rtol=0.1)


# each mutation against the tight product (random ones sit far inside the bound and would not show it)
MUTATIONS = {
    # A's row sums: each lane's own units, not the warp's: the bound's S too small, the shifts too large
    "A's lanes not added": ("        for (int o = 16; o > 0; o /= 2) units += __shfl_xor_sync(0xffffffffu, units, o);\n",
                            "\n"),
    # B's column sums: warp 0's rows of K alone
    "B's warps not added": ("        for (int j = 0; j < 8; ++j) sum += units[j][lane];", "        sum = units[0][lane];"),
}


@pytest.mark.parametrize("family", [OZAKI, OZAKIWG], ids=lambda f: f.name)
@pytest.mark.parametrize("name", MUTATIONS)
def test_a_mutated_norm_is_wrong(family, name):
    config = norm_config(family)
    A, B = tight()
    mutated = edit(render(config), *MUTATIONS[name])
    assert not np.allclose(product(config, mutated, A, B), reference(config, A, B), rtol=0.1)


def test_the_rounding_slack_decides_a_shift_as_in_the_reference():
    """A row of K = 4096 values, a quarter (2^21 - 1) 2^-20 and the rest 2^21 2^-20: its norm scaled by 2^20 is
    about 2^27 - 16, within the slack c/2 = 32 of 2^27 (q at 7 moduli), so the shift is 19, where (2^21 - 1)
    2^-20 does not scale to an integer; without the slack it would be 20, where it does, and C differs."""
    config, K = norm_config(OZAKIWG), 4096
    A = np.full((2, K), 2.0, dtype=np.float32)
    A[0, ::4] = (2**21 - 1) * 2.0**-20
    A[1] = random_inputs(1, 1, K, 3)[0][0]
    B = random_inputs(2, 5, K, 4)[1]
    assert int(ozaki_math.norm_shifts(A[:1], ozaki_math.norm_bits(7), axis=1)[0]) == 19
    source = render(config)
    want = reference(config, A, B)
    assert np.array_equal(product(config, source, A, B), want)
    no_slack = edit(source, "(1ull << (NORM_Q + 1)) - (unsigned long long)c;", "(1ull << (NORM_Q + 1));")
    assert not np.array_equal(product(config, no_slack, A, B), want)


@pytest.mark.parametrize(("family", "arch"), [(OZAKI, "sm_80"), (OZAKI, "sm_90"), (OZAKIWG, "sm_90")],
                         ids=lambda x: getattr(x, "name", x))
def test_the_prologue_keeps_to_registers(family, arch):
    from autotune.explain.sass import Instr

    config = make_config(family, {"MODULI": 7, "SCALE": 1})
    _, kernels = sass_kernels(config, arch)
    prologue = [x.opcode for x in kernels[config.name + PROLOGUE_SUFFIX] if isinstance(x, Instr)]
    assert not any(o.split(".")[0] in ("LDL", "STL") for o in prologue)


def edge_row(K: int, room: int, tiny: int) -> np.ndarray:
    """A row (float32, K values) whose squares, in ozaki_math's units (its largest value 1.5: e = 1, a unit
    4^-19), sum to exactly floor(room / 4^u) for some u, whole units each, plus `tiny` values of 2^-40 (a fraction
    of a unit each: one unit each rounded up, none rounded down). With tiny = 0, 4^u S <= room holds with nothing
    to spare; with tiny > 0 it holds only if the fractions are rounded down."""
    whole = 9 * 2**36  # 1.5^2 4^19
    u = 0
    while whole * 4 ** (u + 1) <= room:
        u += 1
    need = room // 4**u - whole
    ks = []
    while need:  # sums of squares, each k 2^-19 below 1.5 (k <= 786431)
        k = min(math.isqrt(need), 786431)
        ks.append(k)
        need -= k * k
    assert 1 + len(ks) + tiny <= K
    values = [1.5] + [k * 2.0**-19 for k in ks] + [2.0**-40] * tiny
    return np.array(values + [0.0] * (K - len(values)), dtype=np.float32)


def kernel_shifts(config: Config, A: np.ndarray, B: np.ndarray, source: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The shifts ozakiwg's prologue (of `source`, else the config's) wrote (its workspace: T x (Mp + Np) x Kp residue bytes, then Mp and Np int32)."""
    (M, K), N = A.shape, B.shape[1]
    pre = config.prologue(M, N, K)
    assert pre is not None
    W = run_flat(source or render(config), config.name + PROLOGUE_SUFFIX, pre.launch, M, N, K, A, B, pre.floats)
    Mp, Np, Kp = ceil_div(M, BM) * BM, ceil_div(N, config.values["BN"]) * config.values["BN"], ceil_div(K, BK) * BK
    shifts = W.view(np.int32)[config.values["MODULI"] * (Mp + Np) * Kp // 4:]
    return shifts[:M], shifts[Mp:Mp + N]


@pytest.mark.parametrize("K", [4096, 70])  # 70: ceil(sqrt(K)) = 9, not floor's 8
def test_the_prologues_shifts_are_the_references_on_the_bounds_edge(K):
    config = norm_config(OZAKIWG)
    q = ozaki_math.norm_bits(7)
    c = math.isqrt(K - 1) + 1
    rows = [edge_row(K, (2 ** (q + 1) - c) ** 2, tiny=5),  # decided by rounding the squares up
            edge_row(K, (2 ** (q + 1) - c + 1) ** 2, tiny=0),  # by c = ceil(sqrt(K)) where K is not a square
            edge_row(K, (2 ** (q + 1)) ** 2, tiny=0)]  # by the slack itself
    A = np.concatenate([np.array(rows), random_inputs(5, 1, K, 2)[0], random_inputs(2, 1, K, 3)[0] * 2.0**-30])
    A = A.astype(np.float32)
    B = np.ascontiguousarray(np.concatenate([A[:4], random_inputs(1, 3, K, 4)[1].T]).T)
    sa, sb = kernel_shifts(config, A, B)
    assert np.array_equal(sa, ozaki_math.norm_shifts(A, q, axis=1))
    assert np.array_equal(sb, ozaki_math.norm_shifts(B, q, axis=0))
    # each edge row's shift is one below what its edge would allow without what decides it
    loose = [edge_row(K, (2 ** (q + 1) - c) ** 2, tiny=0)]
    assert int(ozaki_math.norm_shifts(np.array(loose), q, axis=1)[0]) == int(sa[0]) + 1


SHIFT_MUTATIONS = {
    "squares rounded down": ("(unsigned long long)ceil((double)x", "(unsigned long long)floor((double)x"),
    "floor(sqrt(K))": ("    while (c * c < K) ++c;\n", "\n"),
    "no slack": ("(1ull << (NORM_Q + 1)) - (unsigned long long)c;", "(1ull << (NORM_Q + 1));"),
}


@pytest.mark.parametrize("name", SHIFT_MUTATIONS)
def test_a_mutated_shift_is_caught_on_the_bounds_edge(name):
    config = norm_config(OZAKIWG)
    K, q = 70, ozaki_math.norm_bits(7)
    rows = [edge_row(K, (2 ** (q + 1) - 9) ** 2, tiny=5), edge_row(K, (2 ** (q + 1) - 8) ** 2, tiny=0),
            edge_row(K, (2 ** (q + 1)) ** 2, tiny=0)]
    A, B = np.array(rows), np.ascontiguousarray(np.array(rows).T)
    sa, _ = kernel_shifts(config, A, B, edit(render(config), *SHIFT_MUTATIONS[name]))
    assert not np.array_equal(sa, ozaki_math.norm_shifts(A, q, axis=1))
