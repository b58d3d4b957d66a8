"""PB=1: a register-blocked kernel whose B, stored N x K (TB=1), is first transposed into a K x N
workspace by a second kernel of the same module (its prologue, space.Prologue), after which the
product is the TB=0 kernel. Checked without a GPU: on the emulator at odd shapes (both of the
prologue's paths: 16-byte and 4-byte), with mutations of the prologue that must fail; the
constraint and the defaults; the Python API launching both into a workspace on the caller's
stream; and the exported launchers (grid, header, HIP)."""
from __future__ import annotations

import inspect
import re
import shutil
import subprocess

import pytest

import autotune
from autotune.codegen.launcher import launchers
from autotune.codegen.render import render
from autotune.families import FAMILIES
from autotune.families.blocked import PB_MIN_ROWS, XPOSE_TILE
from autotune.space import PROLOGUE_SUFFIX, ceil_div, make_config, violations
from autotune.space.formula import derive_prologue
from tests.emulated import edit
from tests.fakes import FakeLauncher
from tests.test_api import DeviceArray
from tests.test_launchers import DATA, LAUNCH, load_module
from tests.test_transposes import SMALL, statuses

BLOCKED = FAMILIES["blocked"]
# K % 4 != 0 and N % 4 != 0 (the prologue's 4-byte reads and writes), one row, one column, a K of 1,
# edge tiles of the prologue (N, K past 64) and of the product, and whole 16-byte paths (64 x 68 x 132).
SHAPES = ((17, 33, 9), (1, 70, 130), (45, 1, 66), (20, 19, 1), (64, 68, 132))
CASES = {
    "NT default tiling": {"TB": 1},
    "TT small tiling": {**SMALL, "TA": 1, "TB": 1, "STAGES": 2, "ASYNC": 0},
    "NT cp.async": {**SMALL, "TB": 1, "STAGES": 3, "ASYNC": 1, "BSWAP": 0},
}


def pb(params: dict):
    c = make_config(BLOCKED, {**params, "PB": 1})
    assert not violations(c) and c.has_prologue
    return c


@pytest.mark.parametrize("case", CASES)
def test_transposing_b_first_matches_the_reference(case):
    c = pb(CASES[case])
    assert statuses(c, render(c), SHAPES) == ["ok"] * len(SHAPES), c.name


def kernel_body(source: str, name: str) -> str:
    """The kernel's own function and what precedes it, without the comment lines (which name the layout)
    and with the spaces that align to the name's length collapsed."""
    pre = source.find(f"{name}{PROLOGUE_SUFFIX}(")
    own = (source[:source.rfind('extern "C"', 0, pre)] if pre >= 0 else source).replace(name, "KERNEL")
    return " ".join(" ".join(line for line in own.splitlines() if not line.startswith("//")).split())


def test_after_its_prologue_the_kernel_is_the_untransposed_one():
    for ta in (0, 1):
        with_pb, plain = pb({"TA": ta, "TB": 1}), make_config(BLOCKED, {"TA": ta, "TB": 0})
        assert with_pb.geometry(300, 500) == plain.geometry(300, 500)
        assert kernel_body(render(with_pb), with_pb.name) == kernel_body(render(plain), plain.name)


@pytest.mark.parametrize("old, new", [
    # the 16-byte write with two of B's rows swapped
    ("make_float4(tile[col][r], tile[col + 1][r],", "make_float4(tile[col + 1][r], tile[col][r],"),
    # the 4-byte write reading the tile untransposed
    ("W[k * N + n + j] = tile[col + j][r];", "W[k * N + n + j] = tile[r][col + j];"),
    # the last row of K dropped
    ("if (k >= K)", "if (k >= K - 1)"),
])
def test_a_wrong_prologue_is_wrong(old, new):
    c = pb(CASES["NT default tiling"])
    assert statuses(c, edit(render(c), old, new), ((17, 33, 9), (64, 68, 132))) != ["ok", "ok"]


def test_the_kernel_without_its_prologue_is_wrong():
    # the product launched on B as stored (N x K) instead of the workspace: a lost prologue
    c = pb(CASES["NT default tiling"])
    lost = c.family.__class__(**{**c.family.__dict__, "prologue": lambda p, M, N, K: None})
    alone = make_config(lost, dict(c.params))
    assert not alone.has_prologue and statuses(alone, render(c), ((17, 33, 9),)) == ["wrong"]


def test_pb_needs_b_stored_along_k_and_the_plain_signature():
    for params in ({"TB": 0, "PB": 1}, {"TB": 1, "PB": 1, "BLAS": 1}):
        assert any("PB=1" in v for v in violations(make_config(BLOCKED, params))), params
    for family in ("splitk", "tailsplit"):  # a transpose of all of B beside a split product: not offered
        assert FAMILIES[family].param("PB").values == (0,)
        assert not make_config(FAMILIES[family], {"TB": 1}).has_prologue
    batched = make_config(BLOCKED, {"TB": 1, "BLAS": 1})
    assert batched.values["PB"] == 0 and batched.values["RT"] == 1  # the default steps aside


def test_the_default_transposes_b_first_only_from_pb_min_rows_on():
    from autotune.api.dispatch import default_choice
    from autotune.api.operands import Layout
    from autotune.space import Limits, fitted

    nt = make_config(BLOCKED, {"TB": 1})
    assert nt.values["PB"] == 1  # the unfitted default
    for M, want in ((1, 0), (PB_MIN_ROWS - 1, 0), (PB_MIN_ROWS, 1), (8192, 1)):
        config = fitted(nt, (M, 4096, 4096), Limits(), {"TB": 1})
        assert config.values["PB"] == want, M
        assert config.values["RT"] == 1 - want  # without the prologue, NT's regrouped loads
        assert default_choice((M, 4096, 4096), Layout(False, True, False, 1)).config == config
    assert "PB" not in BLOCKED.fit(make_config(BLOCKED, {}).values, (1, 64, 64), Limits())  # NN: no prologue to drop


def test_the_prologue_covers_b_with_its_tiles_on_a_one_dimensional_grid():
    c = pb({"TB": 1})
    formula = derive_prologue(c)
    for M, N, K in ((1, 1, 1), (5, 64, 65), (3, 4097, 4095), (1, 1, 2**31 - 1)):
        pre = c.prologue(M, N, K)
        assert pre.floats == K * N and pre.launch.block == (256, 1, 1)
        assert pre.launch.grid == (ceil_div(N, XPOSE_TILE) * ceil_div(K, XPOSE_TILE), 1, 1)
        assert formula.evaluate(M, N, K) == (pre.launch.grid[0], pre.floats)  # what the launchers compute


def test_the_matmul_runs_the_prologue_into_a_workspace_first():
    launcher = FakeLauncher()
    mm = autotune.load(defaults_only=True, launcher=launcher)
    M, N, K = PB_MIN_ROWS, 80, 40  # rows enough for the default to transpose B first (the fit)
    x, w, out = DeviceArray((M, K), 0x100000), DeviceArray((N, K), 0x200000), DeviceArray((M, N), 0x300000)
    mm(x, w, out=out, trans_b=True, stream=77)
    name = mm.choose(M, N, K, trans_b=True).config.name
    (work,) = launcher.workspaces
    pre, own = launcher.launches
    assert work["bytes"] == 4 * K * N and work["stream"] == 77 and work["freed_after"] == 2
    assert pre["kernel"] == f"loaded {name}{PROLOGUE_SUFFIX}" and own["kernel"] == f"loaded {name}"
    assert pre["ptrs"] == (0x100000, 0x200000, work["ptr"]) and own["ptrs"] == (0x100000, work["ptr"], 0x300000)
    assert pre["stream"] == own["stream"] == 77 and pre["launch"].shared_bytes == 0
    mm(x, w, out=out, trans_b=True, stream=77)
    assert len(launcher.loads) == 2  # both kernels loaded once per process


def test_the_exported_launchers_run_the_prologue(tmp_path):
    c = pb({"TB": 1})
    cu = tmp_path / "best.cu"
    made = launchers(c, c.name, c.geometry(96, 80), (96, 80, 40), None, cu)
    header = made.header
    assert f"{c.name}{PROLOGUE_SUFFIX}<<<" in header and "cudaMallocAsync" in header and "cudaFreeAsync" in header
    assert re.search(rf"{c.name}<<<grid, [^>]*>>>\(A, W, C, M, N, K\);", header)
    (tmp_path / "best.py").write_text(made.python)
    module = load_module(tmp_path / "best.py")
    for N, K in ((1, 1), (80, 40), (4097, 129)):
        assert module.prologue_grid(7, N, K) == c.prologue(7, N, K).launch.grid
        assert module.workspace_bytes(7, N, K) == 4 * c.prologue(7, N, K).floats
    assert module.PRE_BLOCK == c.prologue(1, 1, 1).launch.block


HEADER_DRIVER = """
#include <cstdio>
#include "best.h"
alignas(16) static float workspace[4];  // stands for device memory: the stubs only compare it
static int mallocs = 0, frees = 0;
cudaError_t cudaGetDevice(int* d) { *d = 0; return cudaSuccess; }
cudaError_t cudaFuncSetAttribute(const void*, cudaFuncAttribute, int) { return cudaSuccess; }
cudaError_t cudaGetLastError() { return cudaSuccess; }
cudaError_t cudaMallocAsync(void** p, size_t bytes, cudaStream_t) {
    ++mallocs; std::printf("malloc %zu\\n", bytes); *p = workspace; return cudaSuccess; }
cudaError_t cudaFreeAsync(void* p, cudaStream_t) { frees += p == workspace; return cudaSuccess; }
cudaError_t cudaFree(void* p) { frees += p == workspace; return cudaSuccess; }
cudaError_t cudaSetDevice(int) { return cudaSuccess; }
cudaError_t cudaDeviceSynchronize() { return cudaSuccess; }
cudaError_t cudaStreamIsCapturing(cudaStream_t, cudaStreamCaptureStatus* s) {
    *s = cudaStreamCaptureStatusNone; return cudaSuccess; }
void stub_launch(dim3 g, dim3 b, size_t shared, cudaStream_t) {
    std::printf("launch %u %u %u block %u shared %zu\\n", g.x, g.y, g.z, b.x, shared); }
extern "C" void KERNEL_pre(const float*, const float* B, float* W, int, int, int) {
    std::printf("pre B=%s W=%s\\n", B == nullptr ? "B" : "?", W == workspace ? "workspace" : "?"); }
extern "C" void KERNEL(const float*, const float* B, float*, int, int, int) {
    std::printf("kernel B=%s\\n", B == workspace ? "workspace" : "?"); }
int main() {
    std::printf("bytes %zu\\n", KERNEL_workspace_bytes(96, 80, 40));
    std::printf("own %d\\n", (int)KERNEL_launch(nullptr, nullptr, nullptr, 96, 80, 40));
    std::printf("own %d\\n", (int)KERNEL_launch(nullptr, nullptr, nullptr, 96, 80, 40));  // kept: no second malloc
    std::printf("theirs %d\\n", (int)KERNEL_launch_with_workspace(nullptr, nullptr, nullptr, 96, 80, 40, workspace));
    std::printf("none %d\\n", (int)KERNEL_launch_with_workspace(nullptr, nullptr, nullptr, 96, 80, 40, nullptr));
    std::printf("odd %d\\n", (int)KERNEL_launch_with_workspace(nullptr, nullptr, nullptr, 96, 80, 40, workspace + 1));
    std::printf("mallocs %d frees %d\\n", mallocs, frees);
    std::printf("release %d\\n", (int)KERNEL_release_workspaces());
    std::printf("mallocs %d frees %d\\n", mallocs, frees);
}
"""


@pytest.mark.skipif(shutil.which("g++") is None, reason="no g++")
def test_the_header_transposes_into_its_own_workspace_or_the_callers(tmp_path):
    c = pb({"TB": 1})
    geo = c.geometry(96, 80)
    made = launchers(c, c.name, geo, (96, 80, 40), None, tmp_path / "best.cu")
    (tmp_path / "best.h").write_text(LAUNCH.sub(r"stub_launch(\2); \1(\3);", made.header))
    (tmp_path / "driver.cpp").write_text(HEADER_DRIVER.replace("KERNEL", c.name))
    subprocess.run(["g++", "-std=c++17", "-Wall", "-Werror", "-I", str(DATA / "cuda_stub"), "-I", str(tmp_path), "-o",
                    str(tmp_path / "driver"), str(tmp_path / "driver.cpp")], check=True, capture_output=True, text=True)
    lines = subprocess.run([str(tmp_path / "driver")], capture_output=True, text=True, check=True).stdout.splitlines()
    pre, own = c.prologue(96, 80, 40).launch, f"launch {' '.join(map(str, geo.grid))} block 256 shared {geo.shared_bytes}"
    product = [f"launch {pre.grid[0]} 1 1 block 256 shared 0", "pre B=B W=workspace", own, "kernel B=workspace"]
    assert lines == [f"bytes {4 * 80 * 40}", f"malloc {4 * 80 * 40}", *product, "own 0", *product, "own 0", *product,
                     "theirs 0", "none 1", "odd 1", "mallocs 1 frees 0", "release 0", "mallocs 1 frees 1"]


class CaiBuffer:
    def __init__(self, shape, typestr, strides=None):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr, "data": (0x7000, False), "version": 3,
                                         "strides": strides}


def test_the_python_launcher_takes_a_workspace_of_any_type_that_is_large_and_contiguous(tmp_path):
    c = pb({"TB": 1})
    made = launchers(c, c.name, c.geometry(96, 80), (96, 80, 40), None, tmp_path / "best.cu")
    (tmp_path / "best.py").write_text(made.python)
    module = load_module(tmp_path / "best.py")
    assert list(inspect.signature(module.launch).parameters) == ["A", "B", "C", "M", "N", "K", "stream", "workspace"]
    need = module.workspace_bytes(96, 80, 40)
    assert need == 4 * 80 * 40
    for fits in (CaiBuffer((need,), "|u1"), CaiBuffer((need // 4,), "<f4"), CaiBuffer((2, need), "|u1", (need, 1))):
        assert module._workspace(fits, need) == 0x7000
    with pytest.raises(ValueError, match="needs 12800"):
        module._workspace(CaiBuffer((need // 4 - 1,), "<f4"), need)
    with pytest.raises(ValueError, match="contiguous"):
        module._workspace(CaiBuffer((2, need), "|u1", (2 * need, 1)), need)
    with pytest.raises(ValueError, match="16 bytes"):
        module._workspace(0x7004, need)
