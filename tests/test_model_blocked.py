"""The model for the register-blocked family: fragment wavefronts from the lane layout, tile
stores, the BM x BN tile intensity, occupancy from dynamic shared memory, and the real SASS."""
from __future__ import annotations

import pytest

from autotune.errors import AutotuneError
from autotune.explain.banks import blocked_fragment_costs, blocked_shape, blocked_store_wavefronts, widest_load
from autotune.explain.model import PRESETS, intensity, predict
from autotune.explain.sass import SassCounts, find_nvdisasm
from autotune.families import FAMILIES
from autotune.space import make_config, violations

H200 = PRESETS["h200"]
PEAK = H200.fma_tflops

# Thread tiles of growing size, each warp shape chosen so the lanes fit (WMITER = WNITER = 1).
SMALL = {"BM": 64, "BN": 64, "WM": 16, "WN": 32, "WNITER": 1, "TM": 4, "TN": 4}  # 4x4, LANES_N 8
MEDIUM = {"BM": 64, "BN": 64, "WM": 32, "WN": 32, "WNITER": 1, "TM": 8, "TN": 4}  # 8x4, LANES_N 8
LARGE = {"BM": 128, "BN": 128, "WM": 32, "WN": 64, "WNITER": 1, "TM": 8, "TN": 8}  # 8x8, LANES_N 8
SQUARE = {"BM": 128, "BN": 128, "WM": 64, "WN": 64, "WNITER": 2, "TM": 8, "TN": 4}  # 2x2 sub-tiles, LANES_N 8
NARROW = {"BM": 64, "BN": 64, "WM": 32, "WN": 32, "WNITER": 1, "TM": 2, "TN": 2}  # LDS.64 fragments


def blocked(**params: object):
    """A blocked config; left-out parameters from SQUARE (a 128x128 tile of four 64x64 warps:
    the numbers below are worked out for it), then the family's defaults."""
    config = make_config(FAMILIES["blocked"], {**SQUARE, "GM": 8, **params})
    assert not violations(config), violations(config)  # the model is only asked about valid kernels
    return config


def template_counts(config) -> SassCounts:
    """The loads one BK step of the template asks for, at the widest width its runs allow."""
    s = blocked_shape(config)
    lds: dict[int, int] = {}
    for floats, run in ((s.a_floats, s.a_run()), (s.b_floats, s.b_run())):
        words = widest_load(run)
        lds[32 * words] = lds.get(32 * words, 0) + s.BK * floats // words
    return SassCounts(scope="loop", ffma=s.BK * s.ffma_per_k, lds=lds)


def run(config, counts: SassCounts, regs: int = 128):
    return predict(H200, counts, config.geometry(4096, 4096), regs, 0, config)


def test_template_counts_match_the_kernel_header() -> None:
    # 8x4 thread blocks in 2x2 sub-tiles: 16 A + 8 B floats (6 LDS.128) per 128 FFMA per k
    counts = template_counts(blocked(**SQUARE))
    assert counts.ffma == 16 * 128 and counts.lds == {128: 16 * 6}


def test_fragment_loads_broadcast_along_rows_of_lanes() -> None:
    s = blocked_shape(blocked(**SQUARE))  # LANES_N = 8: 4 rows of 8 lanes
    assert (s.lanes_n, s.lanes_m) == (8, 4)
    assert blocked_fragment_costs(s, 4) == (1, 1)  # A: 4 chunks 8 floats apart; B: 32 consecutive words
    wide = blocked_shape(blocked(**LARGE))  # TN=8: B chunks 8 floats apart, 8 of them span 64 words
    assert blocked_fragment_costs(wide, 4) == (1, 2)


def test_wavefronts_per_ffma_fall_as_the_thread_tile_grows() -> None:
    per_ffma = [run(blocked(**p), template_counts(blocked(**p))).wavefronts_per_ffma for p in (SMALL, MEDIUM, LARGE)]
    assert per_ffma[0] > per_ffma[1] > per_ffma[2], per_ffma


def test_tile_stores_pay_for_the_transposed_A_column() -> None:
    # default: 4 float4s of A (4 STS each, 2-way conflicts with pad 4) and 4 STS.128 of B
    assert blocked_store_wavefronts(blocked_shape(blocked())) == 4 * 4 * 2 + 4 * 4
    # no padding: LDA = 128, so the 4 lanes that share a k row all hit one bank
    assert blocked_store_wavefronts(blocked_shape(blocked(pad=0))) == 4 * 4 * 4 + 4 * 4


def test_global_intensity_grows_with_the_block_tile() -> None:
    tiles = [(64, 64), (128, 128), (128, 256), (256, 256)]
    got = [intensity(blocked(BM=m, BN=n, WM=32, WN=64)) for m, n in tiles]
    assert got == [pytest.approx(m * n / (2 * (m + n))) for m, n in tiles]
    assert got == sorted(got) and got[1] == 32  # 128x128: 32 FLOP/B, 153.6 TFLOP/s at 4.8 TB/s
    assert run(blocked(), template_counts(blocked())).global_ceiling == pytest.approx(32 * 4.8)


def test_register_blocking_lifts_the_shared_ceiling_above_tiled() -> None:
    tiled_ceiling = PEAK / 5  # what merged As reads give the tiled family (test_model.py)
    default = run(blocked(), template_counts(blocked()))
    assert tiled_ceiling < default.predicted <= PEAK and default.binding == "fma"
    narrow = run(blocked(**NARROW), template_counts(blocked(**NARROW)))  # 2x2 thread blocks
    assert tiled_ceiling < narrow.shared_ceiling < PEAK and narrow.binding == "shared"


def test_occupancy_counts_the_dynamic_shared_memory() -> None:
    config = blocked(BM=256, BN=256, BK=32)  # 16 warps; 2*32*(256+4+256)*4 = 132096 B
    launch = config.geometry(4096, 4096)
    assert launch.shared_bytes == 132096 and launch.threads == 512
    p = run(config, template_counts(config), regs=32)
    assert p.occupancy.limited_by == "shared" and p.occupancy.blocks_per_sm == 1


# --------------------------------------------------------------------------- real SASS

def _nvdisasm() -> None:
    try:
        find_nvdisasm()
    except AutotuneError:
        pytest.skip("nvdisasm absent: pip install 'sgemm-autotune[sass]'")


def test_real_sass_loads_and_model_wavefronts_fall_with_the_thread_tile() -> None:
    _nvdisasm()
    from autotune.explain.sass import analyze

    lds_per_ffma, per_ffma = [], []
    for params in (SMALL, MEDIUM, LARGE):
        config = blocked(**params)
        r = analyze(config)
        assert r.loop.lds == template_counts(config).lds  # only LDS.128, as many as the template asks
        lds_per_ffma.append(r.loop.lds_per_ffma)
        per_ffma.append(predict(H200, r.loop, config.geometry(4096, 4096), r.resources.registers,
                                r.resources.static_shared, config).wavefronts_per_ffma)
    assert lds_per_ffma == pytest.approx([2 / 16, 3 / 32, 4 / 64])
    assert per_ffma[0] > per_ffma[1] > per_ffma[2], per_ffma


def test_explain_gives_model_columns_for_the_default_blocked_config() -> None:
    _nvdisasm()
    from autotune.explain import counts as ex

    cols = ex.explain(blocked())
    assert cols["ffma"] == 2048 and cols["lds128"] == 96
    for key in ("ceil_shared", "ceil_global", "predicted_tflops", "binding"):
        assert cols[key] is not None, key
    assert cols["ceil_global"] == pytest.approx(32 * 4.8)
    assert PEAK / 5 < cols["predicted_tflops"] <= PEAK and cols["binding"] == "fma"
