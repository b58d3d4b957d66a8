"""The roofline model: the chapter's numbers, flat shared ceiling, global growth, occupancy."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from autotune.errors import AutotuneError
from autotune.explain.banks import wavefronts
from autotune.explain.model import PRESETS, DeviceSpec, occupancy, predict
from autotune.explain.sass import SassCounts, find_nvdisasm
from autotune.families import FAMILIES
from autotune.space import Launch, make_config

H200 = PRESETS["h200"]


def tiled(T: int, pad: int = 0, **kw: object):
    return make_config(FAMILIES["tiled"], {"T": T, "bx": T, "by": T, "pad": pad, **kw})


def chapter_counts(T: int, merged: bool) -> SassCounts:
    """What NVRTC emits for the one-output tiled kernel (see test_sass.py)."""
    lds = {32: T, 128: T // 4} if merged else {32: 2 * T}
    return SassCounts(scope="loop", ffma=T, lds=lds)


def run(config, counts: SassCounts, regs: int = 32):
    launch = config.geometry(4096, 4096)
    from autotune.families.tiled import tiled_shared_bytes

    shared = tiled_shared_bytes(config.values) if config.family.name == "tiled" else 0
    return predict(H200, counts, launch, regs, shared, config)


def test_fma_ceiling_is_lanes_times_two_times_clock() -> None:
    assert H200.fma_tflops == pytest.approx(132 * 128 * 2 * 1.98e9 / 1e12)


def test_wavefronts_broadcast_consecutive_and_column() -> None:
    assert wavefronts([5] * 32, 4) == 1  # LDS.128 broadcast: one pass
    assert wavefronts(list(range(32)), 1) == 1  # 32 consecutive words
    assert wavefronts([4 * i for i in range(32)], 4) == 4  # conflict-free LDS.128: 512 B
    assert wavefronts([32 * i for i in range(32)], 1) == 32  # a column of a 32-wide tile


def test_chapter_numbers_peak_over_8_and_over_5() -> None:
    unmerged = run(tiled(32, pad=1), chapter_counts(32, merged=False))
    merged = run(tiled(32), chapter_counts(32, merged=True))
    assert unmerged.wavefronts_per_ffma == pytest.approx(2.0)
    assert unmerged.shared_ceiling == pytest.approx(H200.fma_tflops / 8)
    assert merged.wavefronts_per_ffma == pytest.approx(1.25)
    assert merged.shared_ceiling == pytest.approx(H200.fma_tflops / 5)


def test_shared_ceiling_is_flat_in_T_and_global_grows() -> None:
    preds = [run(tiled(T), chapter_counts(T, merged=True)) for T in (8, 16, 32)]
    assert len({round(p.shared_ceiling, 9) for p in preds}) == 1
    assert all(p.shared_ceiling < p.fma_ceiling for p in preds)
    assert preds[0].global_ceiling < preds[1].global_ceiling < preds[2].global_ceiling
    assert preds[2].global_ceiling == pytest.approx(8 * 4800 / 1000)  # T/4 FLOP/B x 4.8 TB/s


def test_unpadded_rows_mapping_pays_bank_conflicts() -> None:
    counts = chapter_counts(32, merged=True)
    rows = run(tiled(32, x_over="rows"), counts)
    assert rows.wavefronts_per_ffma == pytest.approx((8 * 32 + 32) / 32)  # As column: 32-way
    assert rows.binding == "shared"


def test_naive_is_global_bound() -> None:
    config = make_config(FAMILIES["naive"], {})
    p = run(config, SassCounts(scope="loop", ffma=16, ldg={32: 32}))
    assert p.binding == "global" and p.predicted == pytest.approx(0.25 * 4.8)
    assert p.shared_ceiling == float("inf")


def test_occupancy_limits() -> None:
    block = Launch(grid=(1, 1, 1), block=(32, 32, 1))
    assert occupancy(H200, block, 32, 8192).blocks_per_sm == 2  # 2048 threads
    assert occupancy(H200, block, 64, 8192).limited_by == "registers"
    assert occupancy(H200, Launch((1, 1, 1), (64, 1, 1)), 32, 48 * 1024).limited_by == "shared"
    small = Launch(grid=(1, 1, 1), block=(32, 1, 1))
    assert occupancy(H200, small, 16, 0).limited_by == "blocks"


def test_from_properties_reads_cuda_core_names() -> None:
    props = SimpleNamespace(
        multiprocessor_count=132, clock_rate=1_980_000, memory_clock_rate=2_619_000,
        global_memory_bus_width=5120, max_registers_per_multiprocessor=65536,
        max_threads_per_multiprocessor=2048, max_blocks_per_multiprocessor=32,
        max_shared_memory_per_multiprocessor=233472, max_shared_memory_per_block_optin=232448,
        reserved_shared_memory_per_block=1024,
    )
    spec = DeviceSpec.from_properties(props, name="H100")
    assert spec.clock_mhz == 1980 and spec.fma_tflops == pytest.approx(PRESETS["h100-sxm"].fma_tflops)
    assert spec.dram_gbps == pytest.approx(3352, rel=1e-3)
    with pytest.raises(AutotuneError):
        DeviceSpec.from_properties(SimpleNamespace(**{**vars(props), "clock_rate": 0}))


def test_real_sass_gives_the_flat_ceiling() -> None:
    try:
        find_nvdisasm()
    except AutotuneError:
        pytest.skip("nvdisasm absent: pip install 'sgemm-autotune[sass]'")
    from autotune.explain.sass import analyze

    preds = []
    for T in (8, 16, 32):
        config = tiled(T)
        r = analyze(config)
        preds.append(predict(H200, r.loop, config.geometry(4096, 4096), r.resources.registers,
                             r.resources.static_shared, config))
    assert {round(p.shared_ceiling, 9) for p in preds} == {round(H200.fma_tflops / 5, 9)}
    assert preds[0].global_ceiling < preds[1].global_ceiling < preds[2].global_ceiling
