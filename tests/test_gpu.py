"""On a GPU: every family verifies against cuBLAS, a broken kernel is caught, the search
records rows, and an exported kernel loads back from its files alone."""
import json

import numpy as np
import pytest

from autotune import store
from autotune.backends.reference import relative_error
from autotune.codegen.render import render
from autotune.families import FAMILIES, NAIVE, TILED
from autotune.space import make_config

pytestmark = pytest.mark.gpu
SHAPE = (257, 129, 67)  # no tile size divides any of these


@pytest.fixture(scope="module")
def backend():
    from autotune.backends.cuda.backend import CudaBackend

    return CudaBackend(*SHAPE, seed=7)


def test_cublas_reference_matches_float64(backend):
    from autotune.backends.reference import random_inputs

    A, B = random_inputs(*SHAPE, 7)
    assert relative_error(backend.main.ref, A.astype(np.float64) @ B) < 1e-6
    assert backend.baseline.median_ms > 0


@pytest.mark.parametrize("family, params", [
    ("naive", {"x_over": "cols"}), ("naive", {"x_over": "rows", "bx": 16, "by": 16}),
    ("tiled", {}), ("tiled", {"T": 16, "pad": 1}), ("tiled", {"T": 64, "bx": 32, "by": 8, "x_over": "rows"}),
    ("tiled", {"T": 4, "bx": 2, "by": 4}),
    ("blocked", {}), ("blocked", {"STAGES": 1, "GM": 1, "pad": 0}),
    ("blocked", {"BK": 32}),  # 66 KiB of dynamic shared memory: needs the opt-in
    ("blocked", {"ASYNC": 1, "STAGES": 3}), ("blocked", {"ASYNC": 1, "STAGES": 4, "BK": 8, "pad": 0}),
    ("blocked", {"BM": 64, "BN": 32, "WM": 32, "WN": 16, "TM": 2, "TN": 1, "WNITER": 1}),
    ("blocked", {"CS": 1}), ("blocked", {"CS": 1, "ASYNC": 1, "STAGES": 3}),  # N = 129: C staged (CS=1)
])
def test_families_verify_and_time(backend, family, params):
    config = make_config(FAMILIES[family], params)
    outcome = backend.measure(config, render(config))
    assert outcome.status == "ok", outcome.reason
    assert outcome.err < 1e-5 and outcome.timing.reps >= 3
    assert outcome.timing.min_ms <= outcome.timing.median_ms <= outcome.timing.max_ms


def test_a_wrong_kernel_is_reported_wrong(backend):
    config = make_config(TILED, {"T": 16})
    broken = render(config).replace("k0 += T", "k0 += T + 1")  # skips a column of K every phase
    outcome = backend.measure(config, broken)
    assert outcome.status == "wrong" and "relative error" in outcome.reason


def test_a_kernel_that_overwrites_the_reference_is_wrong_and_the_reference_restored(backend):
    from autotune.backends.cuda.backend import upload_into

    config = make_config(NAIVE, {})
    p = backend.main
    upload_into(backend.stream, p.ref_dev, np.zeros_like(p.ref))  # what a kernel writing past its output could do
    outcome = backend.measure(config, render(config))
    assert outcome.status == "wrong" and "outside its output" in outcome.reason
    assert backend.measure(config, render(config)).status == "ok"  # the reference was put back


def test_one_wrong_output_beyond_the_check_shape_is_wrong_by_the_elementwise_bound(backend):
    """0.01 off at C[200][100], outside the 131 x 67 check shape: ~2e-5 of ||C||_F, under the
    Frobenius tolerance, ~100x that output's bound (2 K u (|A|.|B|))."""
    config = make_config(NAIVE, {})
    assert backend.measure(config, render(config)).status == "ok"
    broken = render(config).replace("C[row * N + col] = acc;",
                                    "C[row * N + col] = (row == 200 && col == 100) ? acc + 0.01f : acc;")
    outcome = backend.measure(config, broken)
    assert outcome.status == "wrong" and "C[200][100]" in outcome.reason, outcome.reason
    assert outcome.err is not None and outcome.err < 1e-4  # what the Frobenius check alone would pass


def test_unwritten_outputs_are_caught(backend):
    config = make_config(NAIVE, {})
    broken = render(config).replace("if (row >= M || col >= N) return;", "if (row >= M || col >= N - 1) return;")
    assert backend.measure(config, broken).status == "wrong"


def test_search_and_export_round_trip(backend, tmp_path):
    from cuda.core import Device, LaunchConfig, ObjectCode, Program, ProgramOptions, launch

    from autotune.api.export import export_command
    from autotune.search.loop import run_search

    path = tmp_path / "gpu.sqlite"
    db = store.open_db(path)
    result = run_search(db, backend, [NAIVE, TILED], backend.limits, sampler="random", trials=6, seed=2,
                        peak_tflops=backend.peak_tflops)
    assert result.new == 6 and result.best is not None
    cu, js, _, _ = export_command(str(path), SHAPE, None, str(tmp_path / "best.cu"))
    info = json.loads(js.read_text())
    # load the exported kernel from its files alone, as another program would
    dev = Device(0)
    dev.set_current()
    stream = dev.create_stream()
    cubin = Program(cu.read_text(), "c++", ProgramOptions(arch=f"sm_{dev.arch}")).compile("cubin")
    kernel = ObjectCode.from_cubin(cubin.code).get_kernel(info["kernel"])
    M, N, K = info["shape"]["M"], info["shape"]["N"], info["shape"]["K"]
    rng = np.random.default_rng(0)
    A = rng.uniform(-1, 1, (M, K)).astype(np.float32)
    B = rng.uniform(-1, 1, (K, N)).astype(np.float32)
    from cuda.bindings import driver
    bufs = []
    for host in (A, B, np.full((M, N), np.nan, np.float32)):
        buf = dev.allocate(host.nbytes, stream=stream)
        driver.cuMemcpyHtoDAsync(int(buf.handle), host.ctypes.data, host.nbytes, stream.handle)
        bufs.append(buf)
    cfg = LaunchConfig(grid=tuple(info["grid"]), block=tuple(info["block"]), shmem_size=info["dynamic_shared_bytes"])
    launch(stream, cfg, kernel, *bufs, np.int32(M), np.int32(N), np.int32(K))
    C = np.empty((M, N), np.float32)
    stream.sync()
    driver.cuMemcpyDtoHAsync(C.ctypes.data, int(bufs[2].handle), C.nbytes, stream.handle)
    stream.sync()
    assert relative_error(C, A.astype(np.float64) @ B) < 1e-5
    assert info["measured"]["id"] == store.best(db, SHAPE)["id"]


def test_sm_clock_is_read_in_process(backend):
    from autotune.backends.cuda.device import _nvml_sm_clock, sm_clock_mhz

    clock = _nvml_sm_clock(backend.info.uuid)  # NVML, not a nvidia-smi process per trial
    assert clock is not None and 100 < clock < 5000
    assert sm_clock_mhz(backend.info.uuid) > 0


@pytest.mark.parametrize("params", [
    {"BM": 128, "BN": 256, "BK": 8, "WM": 64, "WN": 64, "ASYNC": 1, "STAGES": 3},
    {"BM": 64, "BN": 128, "BK": 16, "WM": 32, "WN": 64, "ASYNC": 1, "STAGES": 2, "GM": 8},
])
def test_async_interior_blocks(params):
    """Shapes that the tiles divide: the cp.async copies take the predicate-free interior path
    (257x129x67 above only exercises the guarded one)."""
    from autotune.backends.cuda.backend import CudaBackend
    from autotune.backends.outcome import OK

    config = make_config(FAMILIES["blocked"], params)
    for shape in ((256, 512, 96), (384, 512, 100)):  # the second: K % BK != 0, the guarded path
        out = CudaBackend(*shape, seed=3).measure(config, render(config))
        assert out.status == OK, (shape, out.reason)
