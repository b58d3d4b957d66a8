"""benchmarks/profiling/wgmma_lab.py without a GPU: every variant compiles for sm_90a, and its
product kernel issues the warpgroup MMAs it should (HGMMA in SASS: 4 k-steps x TERMS per k-tile),
with no local memory (the accumulators stay in registers). PIPE variants: the k-tile's code four
times (the first k-tile, the loop unrolled by two, the tail), each group waited on with one left in
flight (WARPGROUP.DEPBAR.LE gsb0, 0x1: not serialized), and the float4 split uses 128-bit accesses."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from autotune.errors import AutotuneError
from autotune.explain import sass

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks" / "profiling"))
import wgmma_lab  # noqa: E402


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
