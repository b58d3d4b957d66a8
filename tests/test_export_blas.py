"""Export of a BLAS=1 kernel: the manifest's signature is the cuBLAS-style one (space.blas), the C++
launcher takes it all and puts the batches on grid z (checked by compiling it with g++ against the
CUDA stub), and the Python launcher takes the same arguments."""
from __future__ import annotations

import inspect
import json
import shutil
import subprocess

import pytest

from autotune import store
from autotune.api.export import export_command
from autotune.families import BLOCKED
from autotune.space import BLAS_ARGS, make_config
from tests.test_launchers import DATA, LAUNCH, load_module

SMALL = {"BM": 32, "BN": 32, "BK": 8, "WM": 16, "WN": 32, "WNITER": 1, "TM": 2, "TN": 4, "TB": 1, "BLAS": 1}
SHAPE = (96, 80, 40)
DRIVER = """
#include <cstdio>
#include "k.h"
cudaError_t cudaGetDevice(int* d) { *d = 0; return cudaSuccess; }
cudaError_t cudaFuncSetAttribute(const void*, cudaFuncAttribute, int) { return cudaSuccess; }
cudaError_t cudaGetLastError() { return cudaSuccess; }
void stub_launch(dim3 g, dim3, size_t, cudaStream_t) { std::printf("launch %%u %%u %%u\\n", g.x, g.y, g.z); }
extern "C" void %(k)s(const float*, const float*, float*, int, int, int, int, int, int, float, float,
                      long long, long long, long long) {}
int main() {
    std::printf("%%d\\n", (int)%(k)s_launch(nullptr, nullptr, nullptr, 96, 80, 40, 44, 40, 80, 0.5f, 2.0f, 0, 3840, 7680, 3));
    std::printf("%%d\\n", (int)%(k)s_launch(nullptr, nullptr, nullptr, 96, 80, 40, 44, 39, 80, 1.0f, 0.0f, 0, 0, 7680, 3));
    std::printf("%%d\\n", (int)%(k)s_launch(nullptr, nullptr, nullptr, 96, 80, 40, 40, 40, 80, 1.0f, 0.0f, 0, 0, 0, 0));
}
"""


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    folder = tmp_path_factory.mktemp("blas_export")
    config = make_config(BLOCKED, SMALL)
    store.open_db(folder / "r.sqlite").close()
    paths = export_command(str(folder / "r.sqlite"), SHAPE, config, str(folder / "k.cu"))
    return config, paths


def test_the_manifest_and_the_python_launcher_take_the_full_signature(exported):
    config, paths = exported
    info = json.loads(paths.manifest.read_text())
    assert info["signature"].endswith(", ".join(f"{ctype} {name}" for name, ctype in BLAS_ARGS) + ")")
    module = load_module(paths.launcher)
    names = list(inspect.signature(module.launch).parameters)
    assert names == [name for name, _ in BLAS_ARGS] + ["batch", "stream"]
    with pytest.raises(ValueError, match="ldb=39"):
        module.launch(0, 0, 0, 96, 80, 40, 44, 39, 80, 1.0, 0.0, 0, 0, 7680, 3)  # B is N x K: ldb >= K


@pytest.mark.skipif(shutil.which("g++") is None, reason="no g++")
def test_the_header_launches_every_batch_on_grid_z(exported, tmp_path):
    config, paths = exported
    header = paths.header.read_text()
    assert "lda, ldb, ldc, alpha, beta, strideA, strideB, strideC)" in header
    (tmp_path / "k.h").write_text(LAUNCH.sub(r"stub_launch(\2); \1(\3);", header))
    (tmp_path / "driver.cpp").write_text(DRIVER % {"k": config.name})
    subprocess.run(["g++", "-std=c++17", "-Wall", "-Werror", "-I", str(DATA / "cuda_stub"), "-o",
                    str(tmp_path / "driver"), str(tmp_path / "driver.cpp")], check=True, capture_output=True, text=True)
    lines = subprocess.run([str(tmp_path / "driver")], capture_output=True, text=True, check=True).stdout.split("\n")
    x, y, _ = config.geometry(96, 80).grid
    assert lines[:4] == [f"launch {x} {y} 3", "0", "1", "1"]  # launched; ldb < K and batch 0 refused (invalid value)
