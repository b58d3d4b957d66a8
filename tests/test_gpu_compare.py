"""The correctness check on the GPU (autotune/gpu_compare.py) means what reference.relative_error
means on the host. Without a GPU: the kernel compiles and the host's last step is right; with
one: the GPU's answer equals numpy's on outputs right, slightly off, NaN, inf, and against an
all-zero reference. The elementwise bound's kernel likewise: it compiles, the host picks the blocks'
worst output, and on a GPU it names the element reference.element_violation names."""
import math

import numpy as np
import pytest

from autotune.backends.cuda import compare as gpu_compare
from autotune.backends.reference import relative_error
from autotune.codegen.nvrtc import compile_source


def test_the_comparison_kernel_compiles():
    built = compile_source(gpu_compare.SOURCE, gpu_compare.NAME, "sm_90")
    assert built.ok, built.log


def test_the_elementwise_kernel_compiles():
    built = compile_source(gpu_compare.ELEMENTS_SOURCE, gpu_compare.ELEMENTS_NAME, "sm_90")
    assert built.ok, built.log


def test_the_host_picks_the_blocks_worst_output_and_sums_the_scale():
    # per block: ratio, index, error, bound, sum of the scale
    worst = gpu_compare.worst_of(np.array([[0.5, 3.0, 1e-6, 2e-6, 10.0], [4.0, 700.0, 8e-6, 2e-6, 2.5],
                                           [-1.0, -1.0, 0.0, 0.0, 0.0]]))
    assert worst == gpu_compare.Worst(4.0, 700, 8e-6, 2e-6, 12.5)


def test_blocks_cover_small_and_large_outputs():
    assert gpu_compare.blocks_for(1) == 1
    assert gpu_compare.blocks_for(gpu_compare.THREADS + 1) == 2
    assert gpu_compare.blocks_for(4096 * 4096) == gpu_compare.MAX_BLOCKS


def test_the_host_adds_the_blocks_sums_as_relative_error_would():
    # two blocks: diff^2 = 3 + 1, ref^2 = 10 + 6, no bad values -> sqrt(4 / 16); sum ref = 2 - 5
    two = gpu_compare.from_partials(np.array([[3.0, 10.0, 0.0, 2.0], [1.0, 6.0, 0.0, -5.0]]))
    assert two.error == 0.5 and two.ref_sums == (16.0, -3.0)
    assert gpu_compare.from_partials(np.array([[3.0, 10.0, 0.0, 1.0], [1.0, 6.0, 1.0, 1.0]])).error == math.inf
    assert gpu_compare.from_partials(np.array([[4.0, 0.0, 0.0, 0.0]])).error == 2.0  # zero reference: absolute


def _cases() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(11)
    M, N, K = 131, 67, 93  # an odd size: not a multiple of the block
    A = rng.uniform(-1, 1, (M, K)).astype(np.float32)
    B = rng.uniform(-1, 1, (K, N)).astype(np.float32)
    ref = (A.astype(np.float64) @ B).astype(np.float32)
    missing_term = (A[:, :-1].astype(np.float64) @ B[:-1]).astype(np.float32)  # one of K terms left out
    one_off = ref.copy()
    one_off[7, 5] += 1.0
    nan, inf = ref.copy(), ref.copy()
    nan[3, 3] = np.nan
    inf[-1, -1] = np.inf
    large = rng.uniform(-1, 1, (1500, 1300)).astype(np.float32)  # more elements than one pass of the grid
    return {
        "equal": (ref.copy(), ref),
        "rounding": (ref + np.float32(1e-6) * rng.standard_normal(ref.shape).astype(np.float32), ref),
        "one term missing": (missing_term, ref),
        "one output off": (one_off, ref),
        "nan": (nan, ref),
        "inf": (inf, ref),
        "zero reference": (ref, np.zeros_like(ref)),
        "both zero": (np.zeros_like(ref), np.zeros_like(ref)),
        "large": (large * np.float32(1.001), large),
    }


CASES = _cases()


@pytest.fixture(scope="module")
def gpu():
    from cuda.core import Device

    from autotune.backends.cuda.backend import GpuCompare
    from autotune.backends.cuda.device import device_info

    info = device_info(0)
    dev = Device(0)
    dev.set_current()
    stream = dev.create_stream()
    return dev, stream, GpuCompare(dev, stream, info.arch, info.index)


@pytest.mark.gpu
@pytest.mark.parametrize("case", sorted(CASES))
def test_the_gpu_answers_what_numpy_answers(gpu, case):
    from autotune.backends.cuda.backend import upload

    dev, stream, compare = gpu
    C, ref = CASES[case]
    on_gpu = compare.relative_error(upload(dev, stream, C), upload(dev, stream, ref), C.size)
    on_host = relative_error(C, ref)
    if math.isinf(on_host):
        assert math.isinf(on_gpu)
    else:
        assert on_gpu == pytest.approx(on_host, rel=1e-9, abs=1e-300)


@pytest.mark.gpu
@pytest.mark.parametrize("case", ["equal", "rounding", "one output off", "large"])
def test_the_gpu_names_the_element_numpy_names(gpu, case):
    from cuda.core import Device

    from autotune.backends.cuda.backend import GpuElements, upload
    from autotune.backends.cuda.device import device_info
    from autotune.backends.reference import FP32, element_bound, element_violation

    dev, stream, _ = gpu
    info = device_info(0)
    elements = GpuElements(Device(0), stream, info.arch, info.index)
    C, ref = CASES[case]
    scale = np.abs(ref).astype(np.float32) + np.float32(1.0)  # any positive scale: the kernel only reads it
    K = 93
    worst = elements.worst(upload(dev, stream, C), upload(dev, stream, ref), upload(dev, stream, scale), C.size, K)
    assert worst.scale_sum == pytest.approx(float(scale.astype(np.float64).sum()), rel=1e-12)
    on_host = element_violation(C, ref.astype(np.float64), scale.astype(np.float64), K, FP32)
    assert (worst.ratio > 1) == (on_host is not None), (case, worst, on_host)
    ratios = np.abs(C.astype(np.float64) - ref) / (element_bound(1.0, K) * scale.astype(np.float64))
    assert worst.ratio == ratios.max() == ratios.flat[worst.index]  # the worst (any one of equals), exactly
    if case == "one output off":
        assert divmod(worst.index, C.shape[1]) == (7, 5) and "C[7][5]" in on_host
