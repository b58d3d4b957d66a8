"""On a GPU: the split-K, skinny (and its SA=1, SB=1, RED=1, MB=1), tall (and its ST=0) and tail-split families' defaults verify against cuBLAS at a
deep-K and a skinny shape (tail-split also at large shapes, whole waves before its split tail),
and the same loaded kernel gives the same bytes launch after launch (the ordered reduction is
deterministic, and each launch leaves the turnstiles, or split-K's arrival and pair counts, as it found them)."""
import numpy as np
import pytest

from autotune.codegen.render import render
from autotune.families import SKINNY, SPLITK, TALL
from autotune.families.tailsplit import TAILSPLIT
from autotune.space import make_config

pytestmark = pytest.mark.gpu
SHAPES = ((512, 512, 32768), (16, 4096, 4096), (7, 1001, 3001))  # deep K, skinny M, odd skinny
# 4096^3: 396 whole tiles, then 116 tiles in 9 pieces each (WAVE=132); the odd one likewise unaligned
CASES = [(f, {}, s) for f in (SPLITK, SKINNY) for s in SHAPES] + [
    (TAILSPLIT, {}, s) for s in (*SHAPES, (4096, 4096, 4096), (4097, 4095, 4093))] + [
    (SPLITK, {"RED": red, "SPLITK": 16}, s) for red in (1, 2) for s in SHAPES] + [  # the workspace reductions
    (SKINNY, {"MR": 16, "KT": 32, "AH": 1, "SA": 1, "SB": 0}, s) for s in SHAPES] + [  # A by cp.async, B in registers
    (SKINNY, {"MR": 16, "KT": 32, "AH": 2, "SA": 1, "SB": 1}, s) for s in SHAPES] + [  # B too, through each lane's ring
    (SKINNY, {"KT": 64, "SA": 0}, s) for s in SHAPES] + [  # the default before SA: A read from global memory
    (SKINNY, {"MR": 16, "SPLITK": 8, "RED": 1}, s) for s in SHAPES] + [  # the splits' sums through the workspace
    (SKINNY, {"MR": 8, "SA": 1, "SB": 0, "MB": 1}, s) for s in ((7, 1001, 3001), (5, 4099, 4096))] + [  # B's misaligned rows by aligned float4s
    (TALL, params, s) for params in ({}, {"ST": 0}, {"NR": 4, "ST": 6, "KT": 32})  # tall's stages; ST=0: A in registers
    for s in ((4096, 16, 4096), (3001, 7, 1001))]
IDS = [f"{f.name}{''.join(f'-{k}{v}' for k, v in p.items())}-{'x'.join(map(str, s))}" for f, p, s in CASES]


@pytest.mark.parametrize(("family", "params", "shape"), CASES, ids=IDS)
def test_default_verifies_and_times(family, params, shape):
    from autotune.backends.cuda.backend import CudaBackend

    backend = CudaBackend(*shape, seed=5)
    config = make_config(family, params)
    outcome = backend.measure(config, render(config))
    assert outcome.status == "ok", outcome.reason
    assert outcome.timing.reps >= 3


@pytest.mark.parametrize(("family", "params", "shape"), CASES, ids=IDS)
def test_launches_of_one_loaded_kernel_give_identical_bytes(family, params, shape):
    from autotune.backends.cuda.backend import GpuRunner, download, poisoned, upload
    from autotune.backends.cuda.launch import launch_kernel, load_kernel
    from autotune.backends.reference import random_inputs
    from autotune.codegen import nvrtc

    M, N, K = shape
    runner = GpuRunner()
    config = make_config(family, params)
    geo = config.geometry(M, N)
    built = nvrtc.compile_source(render(config), config.name, runner.info.arch)
    assert built.ok, built.log
    kernel = load_kernel(built.cubin, config.name, geo.shared_bytes, runner.info.index)
    A, B = random_inputs(M, N, K, 9)
    a, b = upload(runner.dev, runner.stream, A), upload(runner.dev, runner.stream, B)
    outputs = []
    for _ in range(3):
        c = poisoned(runner.dev, runner.stream, M, N)
        launch_kernel(runner.stream, kernel, geo, a, b, c, M, N, K)
        outputs.append(download(runner.stream, c, M, N))
    assert np.isfinite(outputs[0]).all()
    assert outputs[0].tobytes() == outputs[1].tobytes() == outputs[2].tobytes()


# small products of long K (families/splitk.py's SMALL_PRODUCT), where the fit gives SPLIT_TILE in as many splits as
# leave each about 128 of K, summed through the workspace: odd sides, and K from just past LONG_K to 7472
SMALL_PRODUCTS = ((733, 36, 306), (42, 76, 2460), (1, 689, 7472), (7, 1001, 3001))


@pytest.mark.parametrize("shape", SMALL_PRODUCTS, ids=["x".join(map(str, s)) for s in SMALL_PRODUCTS])
def test_fitted_small_product_verifies(shape):
    from autotune.backends.cuda.backend import CudaBackend
    from autotune.families.splitk import SPLIT_TILE
    from autotune.space import Limits, fitted

    config = fitted(make_config(SPLITK, {}), shape, Limits())
    assert {k: config.values[k] for k in SPLIT_TILE} == SPLIT_TILE and config.values["RED"] == 1
    outcome = CudaBackend(*shape, seed=7).measure(config, render(config))
    assert outcome.status == "ok", outcome.reason
