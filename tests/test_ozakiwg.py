"""The ozakiwg family (the Ozaki scheme II on Hopper's INT8 wgmma) without a GPU: on the CPU emulator its C is
the numeric reference's (autotune.families.ozaki_math) bit for bit at odd shapes, through several k-tiles and
stage refills, and within the fp32-tc contract; mutations are caught (a dropped modulus, the CRT sum's high half
lost, CRT weights without their inverses, a wrong scale, residues not reduced, a residue kept for the wrong modulus, the tiles' swizzle, a row's
largest value missed at its last k, A's shifts held to 127 where a row's values are tiny, the sums lifted by a
number other than a multiple of the modulus); the launch
and workspace formulas; offline SASS for sm_90a (four integer warpgroup MMAs a k-tile, no local memory) and the model's ceiling."""
from __future__ import annotations

import numpy as np
import pytest

from autotune.backends.reference import random_inputs
from autotune.backends.sim import run
from autotune.codegen.nvrtc import compile_source
from autotune.codegen.render import render
from autotune.families import FAMILIES, OZAKIWG, families_for, ozaki_math
from autotune.families.ozaki import B_SPLIT
from autotune.families.ozakiwg import BK, BM, residue_every
from autotune.space import PROLOGUE_SUFFIX, Config, Limits, ceil_div, make_config, valid_configs, violations
from autotune.space.formula import derive_prologue
from tests.emulated import assert_fp32_tc_at, assert_mutation_caught, edit

# odd M, N and K: one k-tile (K = 9, 33), several through every stage and their refills (300: 3 k-tiles,
# 1100: 9, past 3 stages twice); N below BN; a 1-row and a 1-column product
SHAPES = ((17, 9, 33), (131, 67, 300), (1, 70, 200), (70, 1, 128), (65, 33, 1100))
SMALL = {"BN": 64, "STAGES": 3}
CONFIGS = (SMALL, {**SMALL, "MODULI": 6, "WS": 0}, {"BN": 128, "STAGES": 4, "MODULI": 7}, {**SMALL, "WS": 0},
           {"BN": 256, "STAGES": 3, "MODULI": 7}, {"BN": 128, "STAGES": 3, "WS": 0, "MINB": 2})
MUTATION_SHAPE = (131, 67, 1000)


# The values these tests (and docs/ozaki.md's instruction counts) were written at; the family's defaults are the
# fastest config measured (BN=256, 7 moduli scaled by the norm) and move with new measurements
WRITTEN_AT = {"BN": 128, "MODULI": 8, "SCALE": 0}


def wg(params: dict) -> Config:
    return make_config(OZAKIWG, {**WRITTEN_AT, **params})


def reference(config: Config, A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """ozaki_math's C for the config's moduli and scaling."""
    return ozaki_math.ozaki_matmul(A, B, config.values["MODULI"], config.values["SCALE"])


def test_it_is_a_tensor_core_family_for_hopper_alone():
    assert FAMILIES["ozakiwg"] is OZAKIWG and OZAKIWG.precision == "fp32-tc"
    assert "ozakiwg" in families_for("fp32-tc") and "ozakiwg" not in families_for("fp32")
    assert OZAKIWG.needs is not None and OZAKIWG.needs.ok(90) and not OZAKIWG.needs.ok(80)
    assert not OZAKIWG.needs.ok(100)


@pytest.mark.parametrize("params", CONFIGS, ids=lambda p: wg(p).name)
def test_the_emulated_product_is_the_references_bit_for_bit(params):
    config = wg(params)
    source = render(config)
    for shape in SHAPES:
        M, N, K = shape
        A, B = random_inputs(M, N, K, 1)
        C = run(config, source, config.geometry(M, N), A, B, M, N, K)
        assert np.array_equal(C, reference(config, A, B)), shape


def test_it_meets_the_fp32_tc_contract_at_odd_shapes():
    assert_fp32_tc_at(wg(SMALL), SHAPES[:3])



def assert_reference_until_edited(config: Config, A: np.ndarray, B: np.ndarray, *edits: tuple[str, str]) -> None:
    """On the emulator C is the reference's bit for bit, and with each (old, new) edit of the source it is not."""
    (M, K), N = A.shape, B.shape[1]
    source = render(config)
    expected = reference(config, A, B)
    assert np.array_equal(run(config, source, config.geometry(M, N), A, B, M, N, K), expected)
    for old, new in edits:
        assert not np.array_equal(run(config, edit(source, old, new), config.geometry(M, N), A, B, M, N, K),
                                  expected), new


def test_every_position_of_a_row_or_column_can_hold_its_largest_value():
    # One value a thousand times the rest in each row of A and column of B, at positions spread over K and at
    # its last k (the largest-value passes take eight loads at a time, then one at a time for the rest): the
    # scales, hence C, are the reference's bit for bit; with the last k's load left out they are not.
    config = wg(SMALL)
    M, N, K = 37, 41, 300  # K past eight of A's lanes' strides (8 x 32), so both loops run
    A, B = random_inputs(M, N, K, 1)
    A[np.arange(M), (np.arange(M) * 37 + 11) % K] *= 1024
    B[(np.arange(N) * 53 + 5) % K, np.arange(N)] *= 1024
    A[0, K - 1] *= 2**20
    B[K - 1, 0] *= 2**20
    assert_reference_until_edited(config, A, B, ("for (; k < K; k += dk)", "for (; k < K - 1; k += dk)"))


def test_rows_and_columns_of_extreme_magnitude_are_scaled_as_the_reference_scales_them():
    # A row and a column near FP32's smallest normal values (shifts past 127, beyond one float power of two) and
    # one near its largest (negative shifts): C is the reference's bit for bit; with A's shifts held to 127, not.
    config = wg(SMALL)
    M, N, K = 19, 23, 300
    A, B = random_inputs(M, N, K, 1)
    A[3] *= np.float32(1e-36)
    A[7] *= np.float32(1e37)
    B[:, 5] *= np.float32(1e-36)
    B[:, 9] *= np.float32(1e36)
    assert_reference_until_edited(config, A, B, ("round_int(ldexpf(A[(size_t)m * K + k], s))",
                                                 "round_int(ldexpf(A[(size_t)m * K + k], min(s, 127)))"))


def test_the_sums_are_lifted_by_a_multiple_of_the_modulus_before_their_residues():
    # keep takes each sum's residue as an unsigned remainder after adding LIFT: a multiple of the modulus leaves the
    # residue as it is. Lifted by SUM_BOUND itself, or not at all (negative sums read as unsigned), C is no longer the
    # reference's; the fp32-tc contract alone would not see it at this shape (the residues move by a constant, x by
    # one small number: 2x the error)
    lift = "constexpr unsigned long long LIFT = (SUM_BOUND + m - 1) / m * m;"
    assert_reference_until_edited(wg(SMALL), *random_inputs(37, 41, 300, 1),
                                  (lift, "constexpr unsigned long long LIFT = SUM_BOUND;"),
                                  (lift, "constexpr unsigned long long LIFT = 0;"))


MUTATIONS = {
    # the last modulus' residue never put back (the CRT sum one term short)
    "dropped modulus": ("for (int i = 0; i < T; ++i) {\n        const unsigned c", "for (int i = 0; i < T - 1; ++i) {\n        const unsigned c"),
    # the CRT sum's high half lost: S mod 2^32 * Mt's multiples is not x
    "high half dropped": ("hi += (unsigned long long)c * w.hi[i];", "hi += 0ull;"),
    # the weights without the inverses: sum c_i Mt / m_i is not x modulo Mt
    "weights without inverses": ("weight = n * inverse_mod(n, s.m[i]);", "weight = n;"),
    # scaled back by the wrong power of two
    "wrong scale": ("C[r * N + col] = (float)((double)y[at] * pow2_neg(w.sa[r] + w.sb[col]));",
                    "C[r * N + col] = (float)((double)y[at] * pow2_neg(w.sa[r] + w.sb[col] - 1));"),
    # one modulus' residues of A left unreduced: a' & 0xff is not a' modulo m
    "residue not reduced": ("*a_word(w, 3, m, k0) = residue_word<3>(x);",
                            "*a_word(w, 3, m, k0) = pack_s8x4(x[0], x[1], x[2], x[3]);"),
    # the sums of modulus 1 kept as residues modulo modulus 0's number
    "kept for the wrong modulus": ("case 1: keep<1>(acc, run + 1 * ACC)", "case 1: keep<0>(acc, run + 1 * ACC)"),
    # the prologue writes the tiles unswizzled while the descriptors name the 128-byte swizzle
    "no swizzle": ("((kk / 16 ^ (rr & 7)) << 4)", "((kk / 16) << 4)"),
}


@pytest.mark.parametrize("name", MUTATIONS)
def test_a_mutated_kernel_is_wrong(name):
    assert_mutation_caught(wg(SMALL), *MUTATIONS[name], MUTATION_SHAPE)


def test_the_sums_are_reduced_before_they_could_pass_two_to_the_31():
    # |sum| + RESIDUE_EVERY * BK * 127^2 stays below 2^31, one k-tile more could pass it (no emulated K reaches it)
    every = residue_every()
    assert 255 + every * BK * 127**2 < 2**31 <= 255 + (every + 1) * BK * 127**2


def test_the_workspace_and_the_launches_are_the_familys_formulas():
    config = wg({})
    pre = derive_prologue(config)
    bn, t = config.values["BN"], config.values["MODULI"]
    for M, N, K in ((1, 1, 1), (131, 67, 93), (4096, 4096, 4096), (1000, 3000, 777)):
        launch = config.prologue(M, N, K)
        assert launch is not None
        Mp, Np, Kp = ceil_div(M, BM) * BM, ceil_div(N, bn) * bn, ceil_div(K, BK) * BK
        assert launch.floats * 4 == t * (Mp + Np) * Kp + 4 * (Mp + Np) + t * Mp * Np
        assert launch.launch.grid == (Mp // 8 + Np // 32 * B_SPLIT, 1, 1)
        assert config.geometry(M, N).grid == (ceil_div(M, BM) * ceil_div(N, bn), 1, 1)
        env = {"M": M, "N": N, "K": K}
        assert eval(pre.blocks_python(), {}, env) == launch.launch.grid[0]
        assert eval(pre.floats_python(), {}, env) == launch.floats


def test_every_config_fits_a_blocks_shared_memory():
    configs = list(valid_configs(OZAKIWG))
    assert configs and all(not violations(c, Limits()) for c in configs)
    assert all(c.derived["SMEM"] <= Limits().max_shared_optin for c in configs)


# --------------------------------------------------------------------------- offline SASS and the model

def _report(config: Config):
    from autotune.errors import AutotuneError
    from autotune.explain.sass import analyze

    try:
        return analyze(config, "sm_90")
    except AutotuneError as exc:
        if "nvdisasm" not in str(exc):
            raise
        pytest.skip("nvdisasm absent: pip install 'sgemm-autotune[sass]'")


# one block an SM, 64 to 256 columns; two blocks an SM with and without the producer warpgroup
HOT_LOOP_CONFIGS = ({"BN": 64}, {"BN": 128}, {"BN": 256}, {"BN": 64, "MINB": 2}, {"BN": 128, "WS": 0, "STAGES": 3, "MINB": 2})


@pytest.mark.parametrize("params", HOT_LOOP_CONFIGS, ids=lambda p: wg(p).name)
def test_the_hot_loop_holds_four_integer_warpgroup_mmas_and_nothing_spills(params):
    config = wg(params)
    report = _report(config)
    loop = report.loop
    assert loop.scope == "loop" and loop.ffma == 0 and loop.imma == 0
    assert loop.igmma == BK // 32 and loop.igmma_n == config.values["BN"]
    assert not report.resources.spills
    # what MINB blocks leave each thread, and with WS=1 all of it: setmaxnreg hands the producer's registers to the
    # MMA warpgroups within the block's own, which register_split counts from exactly this number
    given = 65536 // (config.derived["THREADS"] * config.values["MINB"]) // 8 * 8
    assert report.resources.registers == given if config.values["WS"] else report.resources.registers <= given


def test_the_product_kernels_instructions_are_what_the_ozaki_doc_says():
    # docs/ozaki.md states the whole product kernel's instructions at BN=128, 7 moduli (autotune sass); within 5%,
    # for another NVRTC's schedule
    import re

    from tests.test_docs_figures import ROOT

    stated = re.search(r"whole product kernel holds (\d+) instructions", (ROOT / "docs" / "ozaki.md").read_text())
    assert stated is not None
    whole = _report(wg({"MODULI": 7})).whole.instructions
    assert abs(whole - int(stated.group(1))) <= 0.05 * int(stated.group(1))


def test_two_blocks_need_their_stages_and_the_systems_share_of_each_block_within_an_sms_shared_memory():
    from autotune.families.ozakiwg import fits_two_blocks, shared_bytes

    p = wg({"BN": 64, "MINB": 2}).values
    needed = 2 * (shared_bytes(p) + Limits().reserved_shared_per_block)
    assert fits_two_blocks(p, Limits(shared_per_sm=needed))
    assert not fits_two_blocks(p, Limits(shared_per_sm=needed - 1))
    assert not fits_two_blocks(p, Limits(shared_per_sm=needed, reserved_shared_per_block=2048))


@pytest.mark.parametrize("minb", [1, 2])
def test_the_producer_hands_the_mma_warpgroups_no_more_registers_than_the_block_has(minb):
    # setmaxnreg.inc waits until the block's own pool has the registers: asking for more than the producer gave
    # back would hang the block
    config = wg({"BN": 64, "MINB": minb})
    threads, producer, consumer = (config.derived[k] for k in ("THREADS", "PRODUCER_REGS", "CONSUMER_REGS"))
    given = 65536 // (threads * minb) // 8 * 8
    assert 128 * producer + 256 * consumer <= threads * given
    assert producer % 8 == 0 and consumer % 8 == 0 and 24 <= producer and consumer <= 256
    assert (producer, consumer) == ((40, 232) if minb == 1 else (32, 104))


def test_it_compiles_for_sm_90a_alone_and_the_prologue_keeps_to_registers():
    from autotune.errors import AutotuneError
    from autotune.explain.sass import Instr, disassemble, split_kernels

    config = wg({})
    built = compile_source(render(config), config.name, "sm_90")
    assert built.ok and built.arch == "sm_90a", built.log[:2000]
    try:
        kernels = split_kernels(disassemble(built.cubin))
    except AutotuneError:
        pytest.skip("nvdisasm absent: pip install 'sgemm-autotune[sass]'")
    for name in (config.name, config.name + PROLOGUE_SUFFIX):
        assert not any(x.opcode.split(".")[0] in ("LDL", "STL") for x in kernels[name] if isinstance(x, Instr)), name


def test_the_models_ceiling_is_the_int8_rate_over_the_moduli():
    from autotune.explain.counts import prediction
    from autotune.explain.model import PRESETS

    spec = PRESETS["h200"]
    counts = {"ffma": 0, "lds32": 0, "lds64": 0, "lds128": 0, "sts": 0, "bar": 1, "sass_regs": 162,
              "static_shared": 0, "sass_scope": "loop", "igmma": 4, "igmma_n": 128}
    ceilings = {}
    for t in (6, 7, 8):
        p = prediction(wg({"MODULI": t}), counts, spec)
        assert p.fma_ceiling == pytest.approx(spec.int8_tops / t)
        ceilings[t] = (p.fma_ceiling, p.shared_ceiling)
    # shared memory: 128 bytes a clock per SM against (64 + 128) * 32 bytes each IGMMA reads for its 2*64*128*32
    # INT8 operations, 1/MODULI of them FP32's
    per_clock = 128 * 2 * 64 * 128 * 32 / ((64 + 128) * 32) / 8
    assert ceilings[8][1] == pytest.approx(132 * 1980e6 * per_clock / 1e12)
    assert ceilings[6] == pytest.approx(tuple(c * 8 / 6 for c in ceilings[8]))
