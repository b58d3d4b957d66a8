"""benchmarks/profiling/wgmma_lab.py without a GPU: every variant compiles for sm_90a, and its
product kernel issues the warpgroup MMAs it should (HGMMA in SASS: 4 k-steps x TERMS per k-tile),
with no local memory (the accumulators stay in registers). PIPE variants: the k-tile's code four
times (the first k-tile, the loop unrolled by two, the tail), each group waited on with one left in
flight (WARPGROUP.DEPBAR.LE gsb0, 0x1: not serialized), and the float4 split uses 128-bit accesses."""
from __future__ import annotations

import re

import pytest

from autotune.errors import AutotuneError
from autotune.explain import sass
from tests.programs import program

wgmma_lab = program("benchmarks/profiling", "wgmma_lab")


@pytest.mark.parametrize("variant", wgmma_lab.VARIANTS, ids=lambda v: "BN{}_S{}_T{}_P{}".format(*v))
def test_the_lab_compiles_to_warpgroup_mmas(variant):
    try:
        sass.find_nvdisasm()
    except AutotuneError as exc:
        pytest.skip(str(exc))
    text = sass.disassemble(wgmma_lab.compile_cubin(*variant))
    product = text[text.index(".text.product:"):]
    product = product[:product.find("//----")] if "//----" in product else product
    bn, _, terms, pipe = variant
    mmas = re.findall(r"HGMMA\.64x(\d+)x8\.F32\.TF32", product)
    assert mmas and set(mmas) == {str(bn)}
    assert len(mmas) == 4 * terms * (4 if pipe else 1)  # one k-tile's, in the loop (PIPE: see above)
    assert "LDL" not in product and "STL" not in product
    waits = re.findall(r"WARPGROUP\.DEPBAR\.LE gsb0, (0x\d+)", product)
    if pipe:  # one wait per k-tile's group leaving it in flight, and the final wait_group 0 (two paths)
        assert waits.count("0x1") == 4 and waits.count("0x0") == 2, waits
        split = text[text.index(".text.split_a4:"):]
        split = split[:split.find("//----")] if "//----" in split else split
        assert "LDG.E.128" in split and "STG.E.128" in split


def test_the_counts_know_warpgroup_mmas_and_the_model_gives_them_the_tensor_core_ceiling():
    try:
        sass.find_nvdisasm()
    except AutotuneError as exc:
        pytest.skip(str(exc))
    from autotune.explain.model import PRESETS, _predict_warpgroup_mma
    from autotune.families import FAMILIES
    from autotune.space import Launch, make_config

    loop = sass.count(sass.disassemble(wgmma_lab.compile_cubin(128, 3, 3, 1)))["product"]
    assert loop.scope == "loop" and loop.hgmma == 24 and loop.hgmma_n == 128  # two k-tiles of 4 k-steps x 3 terms
    if "tf32x3wg" not in FAMILIES:
        pytest.skip("no tf32x3wg family yet")
    spec, config = PRESETS["h200"], make_config(FAMILIES["tf32x3wg"], {"BN": 128, "TERMS": 3})
    p = _predict_warpgroup_mma(spec, loop, Launch((1, 1, 1), (256, 1, 1), 0), 208, 0, config)
    assert p.fma_ceiling == pytest.approx(spec.tf32_tflops / 3)
    # shared memory: 2*64*128*8 FLOP for (64 + 128) * 8 * 4 bytes per HGMMA, at 128 bytes per clock
    assert p.shared_ceiling == pytest.approx(132 * 1980e6 * 128 * (2 * 64 * 128 * 8 / 3) / (192 * 32) / 1e12)
