"""On a GPU: the exported launchers run the kernel at a shape it was never exported for. A host
program built with nvcc includes best.h, calls <kernel>_launch at 1000x999x1001 and at the exported
shape, and matches numpy (float64); the same through best.py on CuPy arrays and a CuPy stream; and
best.py of a kernel with a prologue keeps its stream's workspace: one allocation for repeated calls."""
from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from autotune import store
from autotune.backends.reference import relative_error
from autotune.cli import cli
from tests.names import tags

pytestmark = pytest.mark.gpu
TUNED = (512, 512, 512)
ODD = (1000, 999, 1001)
# the opt-in above 48 KiB (blocked), K splits behind turnstiles on grid z (splitk), small N (tall), a grid of
# the device's SMs read at run time (streamk)
FAMILIES = {"blocked": [], "splitk": [], "tall": ["-p", "NR=8"], "tf32x3wg": [], "streamk": []}  # tf32x3wg: sm_90a, a prologue
APP = r"""
#include "%(header)s"
#include <cstdio>
#include <cstdlib>
#include <vector>

static std::vector<float> load(const char* path, size_t n) {
    std::vector<float> v(n);
    FILE* f = std::fopen(path, "rb");
    if (!f || std::fread(v.data(), sizeof(float), n, f) != n) { std::fprintf(stderr, "cannot read %%s\n", path); std::exit(3); }
    std::fclose(f);
    return v;
}

int main(int argc, char** argv) {
    const int M = std::atoi(argv[1]), N = std::atoi(argv[2]), K = std::atoi(argv[3]);
    std::vector<float> a = load(argv[4], (size_t)M * K), b = load(argv[5], (size_t)K * N), c((size_t)M * N);
    float *A, *B, *C;
    cudaMalloc(&A, a.size() * 4); cudaMalloc(&B, b.size() * 4); cudaMalloc(&C, c.size() * 4);
    cudaMemcpy(A, a.data(), a.size() * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(B, b.data(), b.size() * 4, cudaMemcpyHostToDevice);
    cudaMemset(C, 0xff, c.size() * 4);  // NaN: an output the kernel does not write shows
    cudaStream_t stream;
    cudaStreamCreate(&stream);
    if (%(kernel)s_launch(A, B, C, 0, N, K, stream) != cudaErrorInvalidValue) { std::puts("0 rows accepted"); return 4; }
    for (int i = 0; i < 2; ++i) {  // twice: the opt-in is done once, the turnstiles reset
        cudaError_t err = %(kernel)s_launch(A, B, C, M, N, K, stream);
        if (err != cudaSuccess) { std::printf("launch: %%s\n", cudaGetErrorString(err)); return 5; }
    }
    cudaError_t err = cudaStreamSynchronize(stream);
    if (err != cudaSuccess) { std::printf("run: %%s\n", cudaGetErrorString(err)); return 6; }
    cudaMemcpy(c.data(), C, c.size() * 4, cudaMemcpyDeviceToHost);
    FILE* f = std::fopen(argv[6], "wb");
    std::fwrite(c.data(), 4, c.size(), f);
    std::fclose(f);
    return 0;
}
"""


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    """Each family's config exported at TUNED (named configs: the launchers need no measurement)."""
    folder = tmp_path_factory.mktemp("exports")
    db = folder / "empty.sqlite"
    store.open_db(db)
    out = {}
    for family, params in FAMILIES.items():
        cu = folder / f"{family}.cu"
        result = CliRunner().invoke(cli, ["export", "--M", str(TUNED[0]), "--N", str(TUNED[1]), "--K", str(TUNED[2]),
                                          "--family", family, *params, "--db", str(db), "-o", str(cu)])
        assert result.exit_code == 0, result.output
        out[family] = (cu, json.loads(cu.with_suffix(".json").read_text()))
    return out


def inputs(shape: tuple[int, int, int], seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    M, N, K = shape
    rng = np.random.default_rng(seed)
    return rng.uniform(-1, 1, (M, K)).astype(np.float32), rng.uniform(-1, 1, (K, N)).astype(np.float32)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_host_program_with_the_header_matches_numpy(exports, family, tmp_path):
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("no nvcc on PATH")
    cu, manifest = exports[family]
    app = tmp_path / "app.cu"
    app.write_text(APP % {"header": cu.with_suffix(".h").name, "kernel": manifest["kernel"]})
    binary = tmp_path / "app"
    build = subprocess.run([nvcc, "-O3", "-std=c++17", *manifest["nvcc_flags"], "-I", str(cu.parent), "-o", str(binary),
                            str(app), str(cu)], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr[-3000:]
    for shape in (ODD, TUNED):
        A, B = inputs(shape)
        A.tofile(tmp_path / "a.bin")
        B.tofile(tmp_path / "b.bin")
        run = subprocess.run([str(binary), *map(str, shape), str(tmp_path / "a.bin"), str(tmp_path / "b.bin"),
                              str(tmp_path / "c.bin")], capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, (shape, run.stdout, run.stderr)
        C = np.fromfile(tmp_path / "c.bin", np.float32).reshape(shape[0], shape[1])
        assert relative_error(C, A.astype(np.float64) @ B) < 1e-5, shape


def load_module(path: Path):
    spec = importlib.util.spec_from_file_location(f"exported_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_python_launcher_on_cupy_arrays_matches_numpy(exports, family):
    cp = pytest.importorskip("cupy")
    cu, manifest = exports[family]
    module = load_module(cu.with_suffix(".py"))
    for shape in (ODD, TUNED):
        M, N, K = shape
        A, B = inputs(shape, seed=1)
        dA, dB = cp.asarray(A), cp.asarray(B)
        C = cp.full((M, N), cp.nan, dtype=cp.float32)
        stream = cp.cuda.Stream()  # a blocking stream: it waits for the copies above on the default one
        module.launch(dA, dB, C, M, N, K, stream=stream)
        module.launch(dA.data.ptr, dB, C, M, N, K, stream=stream)  # a device pointer as well
        stream.synchronize()
        assert relative_error(cp.asnumpy(C), A.astype(np.float64) @ B) < 1e-5, shape
    with pytest.raises(ValueError):
        module.launch(cp.zeros((3, 4), cp.float32), cp.zeros((4, 5), cp.float32), cp.zeros((3, 6), cp.float32), 3, 5, 4)


def test_streamk_python_launcher_sizes_its_grid_by_this_gpus_sms(exports):
    cp = pytest.importorskip("cupy")
    cu, manifest = exports["streamk"]
    module = load_module(cu.with_suffix(".py"))
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    assert module.device_sms() == sms and module.grid(*ODD) == (manifest["params"]["SKB"] * sms, 1, 1)


def test_python_launcher_of_an_nt_kernel_transposes_b_into_its_own_workspace_or_the_callers(tmp_path):
    """blocked's NT default (TB=1) is a PB=1 kernel: B, stored N x K, transposed first by the prologue,
    into the stream's kept workspace or one given by the caller."""
    cp = pytest.importorskip("cupy")
    db, cu = tmp_path / "empty.sqlite", tmp_path / "nt.cu"
    store.open_db(db)
    M, N, K = ODD
    result = CliRunner().invoke(cli, ["export", "--M", str(M), "--N", str(N), "--K", str(K), "--family", "blocked",
                                      "-p", "TB=1", "--db", str(db), "-o", str(cu)])
    assert result.exit_code == 0, result.output
    module = load_module(cu.with_suffix(".py"))
    assert {"TB1", "PB1"} <= tags(module.KERNEL)
    rng = np.random.default_rng(2)
    A, W = rng.uniform(-1, 1, (M, K)).astype(np.float32), rng.uniform(-1, 1, (N, K)).astype(np.float32)
    dA, dW = cp.asarray(A), cp.asarray(W)
    workspace = cp.empty(module.workspace_bytes(M, N, K) // 4, dtype=cp.float32)
    for given in (None, workspace):
        C = cp.full((M, N), cp.nan, dtype=cp.float32)
        module.launch(dA, dW, C, M, N, K, workspace=given)
        cp.cuda.Device().synchronize()
        assert relative_error(cp.asnumpy(C), A.astype(np.float64) @ W.T) < 1e-5, given is None


@pytest.mark.parametrize("family, params", [("blocked", ["-p", "TB=1"]), ("tf32x3wg", [])], ids=["PB=1", "tf32x3wg"])
def test_python_launcher_keeps_its_streams_workspace_across_calls(tmp_path, monkeypatch, family, params):
    """Two calls at one shape and one at a smaller allocate once; a larger one grows it; another
    stream has its own; every result matches numpy; release_workspaces frees them."""
    cp = pytest.importorskip("cupy")
    from cuda.bindings import driver

    db, cu = tmp_path / "empty.sqlite", tmp_path / "pre.cu"
    store.open_db(db)
    result = CliRunner().invoke(cli, ["export", "--M", str(ODD[0]), "--N", str(ODD[1]), "--K", str(ODD[2]), "--family",
                                      family, *params, "--db", str(db), "-o", str(cu)])
    assert result.exit_code == 0, result.output
    module = load_module(cu.with_suffix(".py"))
    assert hasattr(module, "workspace_bytes"), "the kernel has no prologue"
    allocated: list[int] = []
    allocate = driver.cuMemAllocAsync
    monkeypatch.setattr(driver, "cuMemAllocAsync", lambda n, s: allocated.append(n) or allocate(n, s))
    stream, other = cp.cuda.Stream(), cp.cuda.Stream()

    def matches(shape: tuple[int, int, int], on) -> bool:
        M, N, K = shape
        A, B = inputs(shape, seed=3)
        stored_b = B.T.copy() if "TB=1" in params else B
        C = cp.full((M, N), cp.nan, dtype=cp.float32)
        module.launch(cp.asarray(A), cp.asarray(stored_b), C, M, N, K, stream=on)
        on.synchronize()
        return relative_error(cp.asnumpy(C), A.astype(np.float64) @ B) < 1e-5

    assert matches(ODD, stream) and matches(ODD, stream) and matches(TUNED, stream)
    assert allocated == [module.workspace_bytes(*ODD)]  # once: the second call and the smaller one reuse it
    assert matches((1100, 1200, 1300), stream) and allocated[1:] == [module.workspace_bytes(1100, 1200, 1300)]
    assert matches(ODD, other) and len(allocated) == 3 and len(module._kept) == 2
    module.release_workspaces()
    assert not module._kept and matches(ODD, stream) and len(allocated) == 4
