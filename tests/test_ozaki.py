"""The ozaki family (FP32 GEMM from INT8 tensor-core products, Ozaki scheme II) without a GPU: on the CPU
emulator its C is the numeric reference's (autotune.families.ozaki_math) bit for bit at odd shapes and
within the fp32-tc contract; fewer moduli are less accurate; mutations are caught (a dropped modulus, a
wrong scale, a scaling past the exactness bound, residues not reduced, a dropped reduction of the sums);
the template's moduli are the reference's; the launch and workspace formulas; offline SASS (integer
tensor-core MMAs, no local memory) for sm_80 to sm_90, the hot loop's IMMA count and the model's ceiling (the
INT8 rate over MODULI)."""
from __future__ import annotations

import re

import numpy as np
import pytest

from autotune.backends.reference import random_inputs
from autotune.backends.sim import run
from autotune.codegen.render import render
from autotune.families import FAMILIES, OZAKI, families_for, ozaki_math
from autotune.families.ozaki import B_SPLIT, MMA_K, MMA_M, MMA_N, residue_every
from autotune.space import PROLOGUE_SUFFIX, Config, Limits, ceil_div, make_config, valid_configs, violations
from autotune.space.formula import derive_prologue
from tests.emulated import assert_fp32_tc_at, assert_mutation_caught, error, sass_kernels

# odd M, N and K past no tile edge; one k-tile (K = 9, 64) and several (93, 200: through 2 and 3 stages);
# N below BN; a 1-row and a 1-column product
SHAPES = ((17, 9, 33), (131, 67, 93), (1, 70, 200), (70, 1, 64), (65, 129, 9))
SMALL = {"BM": 64, "BN": 64, "STAGES": 2}
CONFIGS = (SMALL, {**SMALL, "STAGES": 3, "BK": 128}, {**SMALL, "BN": 128}, {**SMALL, "MODULI": 7},
           {})  # the last: the default, 128 x 64 tiles of 8 warps, 3 stages
MUTATION_SHAPE = (131, 67, 1000)  # K = 1000: p = 25, and p + 4 bits still fit the int32 a scaled operand is


def oz(params: dict) -> Config:
    return make_config(OZAKI, params)


def product(config: Config, source: str, shape: tuple[int, int, int], seed: int = 1) -> tuple[np.ndarray, ...]:
    M, N, K = shape
    A, B = random_inputs(M, N, K, seed)
    return run(config, source, config.geometry(M, N), A, B, M, N, K), A, B


def test_it_is_a_tensor_core_family_for_sm80_and_newer():
    assert FAMILIES["ozaki"] is OZAKI and OZAKI.precision == "fp32-tc"
    assert "ozaki" in families_for("fp32-tc") and "ozaki" not in families_for("fp32")
    assert OZAKI.needs is not None and OZAKI.needs.ok(80) and OZAKI.needs.ok(90) and not OZAKI.needs.ok(75)


@pytest.mark.parametrize("params", CONFIGS, ids=lambda p: oz(p).name)
def test_the_emulated_product_is_the_references_bit_for_bit(params):
    config = oz(params)
    source = render(config)
    for shape in SHAPES:
        C, A, B = product(config, source, shape)
        expected = ozaki_math.ozaki_matmul(A, B, config.values["MODULI"])
        assert np.array_equal(C, expected), shape


@pytest.mark.parametrize("params", CONFIGS[:2], ids=lambda p: oz(p).name)
def test_it_meets_the_fp32_tc_contract_at_odd_shapes(params):
    assert_fp32_tc_at(oz(params), SHAPES)


def test_fewer_moduli_carry_fewer_bits():
    shape = (65, 70, 1000)  # K large enough that 6 moduli leave the operands few bits
    errors = {t: error(oz({**SMALL, "MODULI": t}), render(oz({**SMALL, "MODULI": t})), shape)[1] for t in (6, 7, 8)}
    assert errors[6] > errors[7] > errors[8], errors


# --------------------------------------------------------------------------- mutations

MUTATIONS = {
    # the last modulus' product never added (Garner's loop one short)
    "dropped modulus": ("    for (int i = 0; i < T; ++i) {\n        const signed char* ra",
                        "    for (int i = 0; i < T - 1; ++i) {\n        const signed char* ra"),
    # every shift one too small: the operands scaled to half, C twice what it should be... scaled back by
    # the wrong power (the shifts stored are not the ones used)
    "wrong scale": ("C[r * N + c] = (float)((double)sv * pow2_neg(w.sa[r] + w.sb[c]));",
                    "C[r * N + c] = (float)((double)sv * pow2_neg(w.sa[r] + w.sb[c] - 1));"),
    # four bits past the exactness bound (fewer may not show: the bound is for the largest possible sum, and
    # randn's are far below it): sums of K products pass Mt/2 and wrap in the reconstruction
    "past the exactness bound": ("    return p;\n}", "    return p + 4;\n}"),
    # one modulus' residues of A left unreduced: a' & 0xff is not a' modulo m
    "residue not reduced": ("*a_word(w, 3, m, k0) = residue_word<3>(x);",
                            "*a_word(w, 3, m, k0) = pack_s8x4(x[0], x[1], x[2], x[3]);"),
}


@pytest.mark.parametrize("name", MUTATIONS)
def test_a_mutated_kernel_is_wrong(name):
    assert_mutation_caught(oz(SMALL), *MUTATIONS[name], MUTATION_SHAPE)


def test_the_sums_are_reduced_before_they_could_pass_two_to_the_31():
    # the reduction every RESIDUE_EVERY k-tiles keeps |sum| + RESIDUE_EVERY * BK * 127^2 below 2^31; one
    # more k-tile between reductions could pass it (a K the emulator could not run in a test: checked here)
    for bk in (64, 128):
        every = residue_every({"BK": bk})
        assert 255 + every * bk * 127**2 < 2**31 <= 255 + (every + 1) * bk * 127**2


# --------------------------------------------------------------------------- the scheme's numbers

def test_the_templates_moduli_are_the_references():
    source = render(oz({}))
    listed = re.search(r"Scheme s = \{ \{([0-9u, ]+)\}", source)
    assert listed is not None
    assert tuple(int(v.strip().rstrip("u")) for v in listed.group(1).split(",")) == ozaki_math.MODULI


def test_the_workspace_and_the_launches_are_the_familys_formulas():
    config = oz({})
    pre = derive_prologue(config)
    for M, N, K in ((1, 1, 1), (131, 67, 93), (4096, 4096, 4096), (1000, 3000, 777)):
        launch = config.prologue(M, N, K)
        assert launch is not None
        Mp, Np, Kp = ceil_div(M, 128) * 128, ceil_div(N, 64) * 64, ceil_div(K, 64) * 64
        assert launch.floats * 4 == 8 * (Mp + Np) * Kp + 4 * (Mp + Np)
        assert launch.launch.grid == (Mp // 8 + Np // 32 * B_SPLIT, 1, 1)
        env = {"M": M, "N": N, "K": K}
        assert eval(pre.blocks_python(), {}, env) == launch.launch.grid[0]
        assert eval(pre.floats_python(), {}, env) == launch.floats


def test_every_config_keeps_its_threads_shared_memory_and_registers_within_a_blocks():
    configs = list(valid_configs(OZAKI))
    assert configs and all(not violations(c, Limits()) for c in configs)
    assert all(c.derived["THREADS"] <= 1024 and c.derived["SMEM"] <= Limits().max_shared_optin for c in configs)


# --------------------------------------------------------------------------- offline SASS

@pytest.mark.parametrize("arch", ["sm_80", "sm_86", "sm_89", "sm_90"])
def test_the_product_runs_on_the_integer_tensor_cores_without_local_memory(arch):
    from autotune.explain.sass import Instr

    config = oz({})
    _, kernels = sass_kernels(config, arch)
    ops = [x.opcode for x in kernels[config.name] if isinstance(x, Instr)]
    d, p = config.derived, config.values
    per_tile = d["MI"] * d["NJ"] * p["BK"] // MMA_K  # one IMMA per MMA tile and k-step of 32, the k-loop not unrolled
    assert sum(o.startswith("IMMA.16832.S8.S8") for o in ops) == per_tile
    assert (MMA_M, MMA_N) == (16, 8)
    for name in (config.name, config.name + PROLOGUE_SUFFIX):
        assert not any(o.split(".")[0] in ("LDL", "STL") for o in (x.opcode for x in kernels[name]
                                                                     if isinstance(x, Instr))), name


@pytest.mark.parametrize("bk", [64, 128])
def test_the_hot_loop_holds_one_imma_per_mma_tile_and_k_step_of_a_k_tile(bk):
    from autotune.errors import AutotuneError
    from autotune.explain.counts import count_columns, format_counts, model_columns
    from autotune.explain.model import PRESETS
    from autotune.explain.sass import analyze

    config = oz({"BK": bk})
    try:
        report = analyze(config, "sm_90")
    except AutotuneError as exc:
        if "nvdisasm" not in str(exc):
            raise
        pytest.skip("nvdisasm absent: pip install 'sgemm-autotune[sass]'")
    loop = report.loop
    assert loop.scope == "loop" and loop.ffma == 0
    assert loop.imma == (32 // MMA_M) * (32 // MMA_N) * (bk // MMA_K)  # 16 for BK=64, 32 for 128
    text = format_counts(report, model_columns(config, count_columns(report), PRESETS["h200"]))
    assert f"IMMA {loop.imma} (INT8 m16n8k32)" in text and "shared loads per IMMA 2" in text


# What the SASS of the default config's hot loop holds (the test above, BK=64): 16 IMMA, 32 LDS (a word of
# a fragment each), 198 registers; the model reads nothing else
DEFAULT_COUNTS = {"ffma": 0, "lds32": 32, "lds64": 0, "lds128": 0, "sts": 0, "bar": 1, "sass_regs": 198,
                  "static_shared": 0, "sass_scope": "loop", "imma": 16}


def test_the_models_ceiling_is_the_int8_rate_over_the_moduli():
    from autotune.errors import AutotuneError
    from autotune.explain.counts import prediction
    from autotune.explain.model import PRESETS, DeviceSpec

    spec = PRESETS["h200"]
    ceilings = {}
    for t in (6, 7, 8):
        p = prediction(oz({"MODULI": t}), DEFAULT_COUNTS, spec)
        assert p.fma_ceiling == pytest.approx(spec.int8_tops / t)
        assert p.predicted < spec.int8_tops / t  # shared memory and DRAM bind first
        ceilings[t] = (p.fma_ceiling, p.shared_ceiling, p.global_ceiling)
    for t in (6, 7):  # every ceiling falls as 1/MODULI: each FP32 product costs MODULI INT8 products
        assert ceilings[t] == pytest.approx(tuple(c * 8 / t for c in ceilings[8]))
    # shared memory: a wavefront per SM per clock for 2 LDS per IMMA of 2*16*8*32 INT8 operations, 1/8 of them FP32's
    assert ceilings[8][1] == pytest.approx(132 * 1980e6 * (16 * 2 * 16 * 8 * 32 / 8) / 32 / 1e12)
    unknown = DeviceSpec("a GPU without an INT8 rate", sm_count=132, clock_mhz=1980, dram_gbps=4800)
    with pytest.raises(AutotuneError, match="no INT8 tensor-core rate for a GPU without an INT8 rate") as caught:
        prediction(oz({}), DEFAULT_COUNTS, unknown)
    assert "\n" not in str(caught.value)
