"""On a GPU: blocked AL=1 and AL=2 (A and B copied first into rows padded to multiples of 4 floats, or to
whole tiles), and the tail split's AL=2, verify against cuBLAS and time, prologue and product as one config,
at shapes whose rows are not 16-byte aligned and at one whose rows are; so do blocked's and split-K's MA=1
MB=1 (misaligned rows read as the aligned float4s that hold them)."""
import pytest

from autotune.codegen.render import render
from autotune.families import FAMILIES
from autotune.space import make_config

pytestmark = pytest.mark.gpu
SHAPES = ((4097, 4095, 4093), (1001, 999, 997), (512, 512, 512))


@pytest.mark.parametrize("family, level", (("blocked", 1), ("blocked", 2), ("tailsplit", 2)))
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_aligned_copies_verify_and_time(shape, family, level):
    from autotune.backends.cuda.backend import CudaBackend

    config = make_config(FAMILIES[family], {"AL": level})
    outcome = CudaBackend(*shape, seed=5).measure(config, render(config))
    assert outcome.status == "ok", outcome.reason
    assert outcome.timing.reps >= 3


@pytest.mark.parametrize("family, values", (("blocked", {}), ("blocked", {"TA": 1, "TB": 1, "PB": 0}),
                                            ("splitk", {"SPLITK": 4})), ids=("NN", "TT", "splitk"))
@pytest.mark.parametrize("shape", SHAPES[1:], ids=lambda s: "x".join(map(str, s)))
def test_aligned_pairs_verify_and_time(shape, family, values):
    from autotune.backends.cuda.backend import CudaBackend

    config = make_config(FAMILIES[family], {**values, "MA": 1, "MB": 1, "ASYNC": 0, "STAGES": 2})
    outcome = CudaBackend(*shape, seed=5).measure(config, render(config))
    assert outcome.status == "ok", outcome.reason
    assert outcome.timing.reps >= 3
