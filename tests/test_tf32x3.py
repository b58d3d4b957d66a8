"""The tf32x3 family (3xTF32 on tensor cores) on the CPU emulator: FP32-class error at odd shapes
with TERMS=3 and clearly worse plain TF32 (TERMS=1); a wrong fragment lane mapping and a dropped
correction term caught; the emulator's TF32 rounding; its space and its SASS (HMMA)."""
from __future__ import annotations

import numpy as np
import pytest

from autotune.backends.sim import run_kernel
from autotune.codegen.render import render
from autotune.families import FAMILIES, TF32X3
from autotune.space import Config, Launch, make_config, violations
from tests.emulated import assert_fp32_tc_at, edit, error, plain_tf32

# K not a multiple of 4 (37, 9: 4-byte copies) nor of BK; M and N not multiples of any tile; one
# shape with 16-byte copies (K, N multiples of 4) and a partial last tile (100 = 3*32 + 4).
SHAPES = ((1, 1, 1), (70, 45, 37), (33, 130, 100), (17, 8, 9))
SMALL = {"BM": 64, "BN": 64, "BK": 16, "WM": 32, "WN": 32, "STAGES": 2}
# the second sums in the tensor cores' accumulator alone (PROMOTE=0), the first adds each stage into an FP32 sum
CONFIGS = (SMALL, {"BM": 64, "BN": 64, "BK": 32, "WM": 64, "WN": 16, "STAGES": 3, "PROMOTE": 0})
MUTATION_SHAPE = (33, 130, 100)


def tf32(params: dict) -> Config:
    return make_config(TF32X3, params)




@pytest.mark.parametrize("params", CONFIGS)
def test_three_terms_are_as_accurate_as_fp32_at_odd_shapes(params):
    assert_fp32_tc_at(tf32({**params, "TERMS": 3}), SHAPES)


def test_plain_tf32_is_clearly_worse():
    shape = (70, 45, 37)
    _, three = error(tf32({**SMALL, "TERMS": 3}), render(tf32({**SMALL, "TERMS": 3})), shape)
    status, one = error(*plain_tf32(tf32(SMALL)), shape)
    assert status == "wrong" and one > 100 * three  # TF32's 10-bit mantissa against ~21 bits


def test_a_wrong_fragment_lane_mapping_is_wrong():
    config = tf32({**SMALL, "TERMS": 3})
    source = render(config)
    assert error(config, source, MUTATION_SHAPE)[0] == "ok"
    # a1 and a2 swapped: rows g+8 and columns t+4 of A trade places in the MMA.
    swapped_a = edit(source, "{p[0], p[8 * LDA], p[4], p[8 * LDA + 4]}", "{p[0], p[4], p[8 * LDA], p[8 * LDA + 4]}")
    assert error(config, swapped_a, MUTATION_SHAPE)[0] == "wrong"
    # B's fragment read with the roles of g and t exchanged (row g, column t).
    swapped_b = edit(source, "Bs + (kk + t) * LDB + wn0 + j * 8 + g", "Bs + (kk + g % 4) * LDB + wn0 + j * 8 + t + g / 4 * 4")
    assert error(config, swapped_b, MUTATION_SHAPE)[0] == "wrong"


def test_a_dropped_correction_term_is_wrong():
    config = tf32({**SMALL, "TERMS": 3})
    source = render(config)
    _, whole = error(config, source, MUTATION_SHAPE)
    dropped = edit(source, "mma_tf32(acc[i][j], aSmall[i], bBig[j]);", "")
    status, err = error(config, dropped, MUTATION_SHAPE)
    assert status == "wrong" and err > 100 * whole


def test_emulator_rounds_to_tf32_to_nearest_ties_away():
    source = render(tf32({**SMALL, "TERMS": 3})) + """
extern "C" __global__ void rounding(const float* A, const float* B, float* C, int M, int N, int K)
{
    C[threadIdx.x] = to_tf32(A[threadIdx.x]);
}
"""
    one = np.float32(1.0)
    ulp = np.float32(2.0**-10)  # a TF32 unit at 1
    x = np.array([1 + ulp / 2, -(1 + ulp / 2), 1 + ulp / 2 - np.float32(2.0**-23), 1 + 3 * ulp / 2,
                  np.float32(2.0) - ulp / 2, np.inf, np.finfo(np.float32).max], np.float32)
    expect = np.array([1 + ulp, -(1 + ulp), one, 1 + 2 * ulp, 2.0, np.inf, np.inf], np.float32)
    n = len(x)
    A = np.ascontiguousarray(x.reshape(n, 1))  # M = n rows, K = N = 1: C has n outputs
    C = run_kernel(source, "rounding", Launch(grid=(1, 1, 1), block=(n, 1, 1)), A, np.ones((1, 1), np.float32), n, 1, 1)
    assert C.ravel().tolist() == expect.tolist()


def test_tf32x3_space_constraints():
    fam = FAMILIES["tf32x3"]
    assert violations(make_config(fam, {})) == []
    cases = {
        "warp tiles must tile": {"BM": 64, "WM": 128},
        "must not exceed the device limit": {"BM": 256, "BN": 256, "WM": 32, "WN": 16},
        "divide the float4 copies": {"BM": 64, "BN": 128, "BK": 16, "WM": 32, "WN": 16},
        "accumulators per thread": {"BM": 128, "WM": 128, "WN": 64},
        "per-block limit": {"BM": 256, "BN": 256, "BK": 32, "STAGES": 4, "WM": 64, "WN": 64},
    }
    for reason, params in cases.items():
        assert any(reason in v for v in violations(make_config(fam, params))), (reason, params)


def test_the_default_runs_on_tensor_cores_and_the_model_knows_it():
    from autotune.errors import AutotuneError
    from autotune.explain.counts import count_columns, format_counts, model_columns
    from autotune.explain.model import PRESETS
    from autotune.explain.sass import analyze, find_nvdisasm

    try:
        find_nvdisasm()
    except AutotuneError:
        pytest.skip("nvdisasm absent: pip install 'sgemm-autotune[sass]'")
    config = make_config(TF32X3, {})
    report = analyze(config)
    p = config.values
    steps = p["BK"] // 8  # k-steps of one tile; the hot loop holds at least one tile
    per_tile = (p["WM"] // 16) * (p["WN"] // 8) * p["TERMS"] * steps
    assert report.loop.hmma > 0 and report.loop.hmma % per_tile == 0 and report.loop.ffma == 0
    assert report.loop.ldgsts > 0 and not report.resources.spills
    model = model_columns(config, count_columns(report), PRESETS["h200"])
    assert model["ceil_fma"] == pytest.approx(PRESETS["h200"].tf32_tflops / p["TERMS"])
    assert "HMMA" in format_counts(report, model)


def test_tensor_core_families_only_under_fp32_tc():
    from autotune.cli.options import parse_families
    from autotune.errors import AutotuneError

    assert TF32X3 not in parse_families(None)
    assert TF32X3 in parse_families(None, "fp32-tc")
    assert parse_families("tf32x3", "fp32-tc") == [TF32X3]
    with pytest.raises(AutotuneError, match="--precision fp32-tc"):
        parse_families("blocked,tf32x3")
