"""benchmarks/profiling/wgmma_lab.py without a GPU: every variant compiles for sm_90a, and its
product kernel issues the warpgroup MMAs it should (HGMMA in SASS: 4 k-steps x TERMS per k-tile),
with no local memory (the accumulators stay in registers)."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from autotune.errors import AutotuneError
from autotune.explain import sass

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks" / "profiling"))
import wgmma_lab  # noqa: E402


@pytest.mark.parametrize("variant", wgmma_lab.VARIANTS, ids=lambda v: "BN{}_S{}_T{}".format(*v))
def test_the_lab_compiles_to_warpgroup_mmas(variant):
    try:
        sass.find_nvdisasm()
    except AutotuneError as exc:
        pytest.skip(str(exc))
    text = sass.disassemble(wgmma_lab.compile_cubin(*variant))
    product = text[text.index(".text.product:"):]
    product = product[:product.find("//----")] if "//----" in product else product
    bn, _, terms = variant
    mmas = re.findall(r"HGMMA\.64x(\d+)x8\.F32\.TF32", product)
    assert mmas and set(mmas) == {str(bn)}
    assert len(mmas) == 4 * terms  # one k-tile's, in the loop
    assert "LDL" not in product and "STL" not in product
