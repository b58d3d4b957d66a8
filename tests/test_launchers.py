"""The exported launchers without a GPU: the grid formula derived from each family's geometry
equals that geometry at many shapes; the C++ header compiles (g++, against a stub of the CUDA
runtime) and its grid function and launcher agree with the family; the Python launcher imports
without a GPU and computes the same grid; a family whose grid cannot be derived falls back, and
says so, to the exported shape; `export` writes the four files and the manifest's new keys. A grid
sized by the device (streamk's blocks per SM) reads the SM count of the GPU it launches on: here a
stub's 108 (an A100's), as a GPU-less test cannot ask a real one."""
from __future__ import annotations

import dataclasses
import importlib.util
import inspect
import json
import random
import re
import shutil
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from autotune.cli import cli
from autotune.codegen.launcher import launchers
from autotune.codegen.render import render
from autotune.families import FAMILIES, NAIVE, SPLITK
from autotune.space import Launch, ceil_div, make_config, random_valid
from autotune.space.devices import PRESETS
from autotune.space.formula import GridFormula, derive_formula

DATA = Path(__file__).resolve().parent / "data"
PRE_BSWAP = Path(__file__).resolve().parents[1] / "benchmarks" / "data" / "h200-4096-final.sqlite.gz"
ODD = (1, 3, 7, 31, 33, 63, 65, 127, 129, 255, 257, 511, 999, 1000, 1001, 4095, 4097, 8191, 9999, 10000)
SHAPES = [(m, n) for m in ODD for n in ODD[::3]] + [(1, 10000), (10000, 1), (65535 * 16 + 1, 3)]
# refused by split-K's turnstile count at small tiles (tiles > 65536), and by the int range
BIG = [(40000, 40000), (46341, 46341)]
STUB = PRESETS["a100"]  # the device the stubs below report: 108 SMs, not the default (H200) Limits' 132


def configs():
    rng = random.Random(5)
    out = []
    for family in FAMILIES.values():
        out.append(make_config(family, {}))
        out += [c for c in (random_valid(family, rng) for _ in range(3)) if c is not None]
    out.append(make_config(SPLITK, {"BM": 32, "BN": 32, "WM": 16, "WN": 16, "TM": 1, "TN": 1, "WNITER": 1}))
    return out


@pytest.mark.parametrize("config", configs(), ids=str)
def test_formula_equals_the_family_geometry(config):
    """Every family has one: tailsplit's pieces per tail tile (a loop over candidates) through a
    helper function the launchers define (space.expr.Helper)."""
    formula = derive_formula(config)
    assert isinstance(formula, GridFormula), formula
    for M, N in SHAPES + BIG:
        geo = config.geometry(M, N)
        grid, accepted = formula.evaluate(M, N)
        assert grid == geo.grid, (M, N)
        assert accepted == (not config.family.shape_rules(config.values, M, N)), (M, N)
        assert formula.block == geo.block and formula.shared_bytes == geo.shared_bytes


def test_only_a_grid_of_the_devices_sms_reads_them_and_the_formula_keeps_them_a_name():
    """streamk's grid, SKB x the device's SMs, is `sms` in the formula, not the default Limits' 132: evaluated
    on each named device it is that device's grid. No other family's formula reads the SM count."""
    for config in configs():
        formula = derive_formula(config)
        assert isinstance(formula, GridFormula) and formula.reads_sms == (config.family.name == "streamk"), config
    for skb in (1, 2, 3):
        config = make_config(FAMILIES["streamk"], {"SKB": skb})
        formula = derive_formula(config)
        assert isinstance(formula, GridFormula)
        assert formula.grid_c() == formula.grid_python() == ["sms" if skb == 1 else f"{skb} * sms", "1", "1"]
        for limits in PRESETS.values():
            assert formula.evaluate(1024, 1024, limits)[0] == config.geometry(1024, 1024, limits).grid == (skb * limits.sms, 1, 1)


def _branchy(p, M, N):
    """min and max compare: each comparison is explored both ways and joined into a select."""
    rows = min(ceil_div(M, 128), 7)
    return Launch(grid=(max(ceil_div(N, 64), rows), rows, 2 if M > 300 else 1), block=(128, 1, 1))


def _loopy(p, M, N):
    """A loop over a shape value: no formula (as for a family that searches pieces per shape)."""
    return Launch(grid=(sum(1 for _ in range(ceil_div(M, 64))), 1, 1), block=(128, 1, 1))


def test_min_max_and_branches_are_derived():
    config = make_config(dataclasses.replace(NAIVE, geometry=_branchy), {})
    formula = derive_formula(config)
    assert isinstance(formula, GridFormula), formula
    assert "?" in formula.grid_c()[0] and " if " in formula.grid_python()[2]
    for M, N in SHAPES:
        assert formula.evaluate(M, N)[0] == _branchy({}, M, N).grid, (M, N)


def test_a_family_without_a_formula_falls_back_to_the_exported_shape(tmp_path):
    config = make_config(dataclasses.replace(NAIVE, name="loopy", geometry=_loopy), {})
    reason = derive_formula(config)
    assert isinstance(reason, str) and "loopy" in reason
    made = launchers(config, config.name, config.geometry(200, 30), (200, 30, 5), None, tmp_path / "best.cu")
    assert made.grid_formula["c"] is None and "200x30" in made.grid_formula["fallback"]
    assert "Only the exported shape's grid is known" in made.header and "if (M != 200 || N != 30) return false;" in made.header
    (tmp_path / "best.py").write_text(made.python)
    module = load_module(tmp_path / "best.py")
    assert module.grid(200, 30, 77) == (4, 1, 1)
    with pytest.raises(ValueError, match="only the exported shape"):
        module.grid(201, 30, 5)


# ----------------------------------------------------------------- the exported files themselves

def load_module(path: Path):
    spec = importlib.util.spec_from_file_location(f"exported_{abs(hash(path))}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


EXPORTS = {  # name -> (family, params): the opt-in, a shape rule, a plain grid, no formula
    "blocked": ("blocked", {}), "splitk": ("splitk", {"BM": 32, "BN": 32, "WM": 16, "WN": 16, "TM": 1, "TN": 1, "WNITER": 1}),
    "naive": ("naive", {"x_over": "rows"}), "loopy": ("loopy", {}),
    "tailsplit": ("tailsplit", {"BM": 32, "BN": 32, "WM": 16, "WN": 16, "TM": 1, "TN": 1, "WNITER": 1}),  # a helper
    "streamk": ("streamk", {}),  # a grid of the device's SMs
}


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """Each EXPORTS config's launchers at 96x80 (no database: the text alone)."""
    folder = tmp_path_factory.mktemp("exported")
    out = {}
    for name, (family, params) in EXPORTS.items():
        fam = dataclasses.replace(NAIVE, name="loopy", geometry=_loopy) if family == "loopy" else FAMILIES[family]
        config = make_config(fam, params)
        cu = folder / f"{name}.cu"
        made = launchers(config, config.name, config.geometry(96, 80), (96, 80, 40), (96, 80, 40), cu)
        cu.write_text(render(config))
        cu.with_suffix(".h").write_text(made.header)
        cu.with_suffix(".py").write_text(made.python)
        out[name] = (config, cu)
    return out


LAUNCH = re.compile(r"(\w+)<<<(.*?)>>>\((.*?)\);")
DRIVER = """
#include <cstdio>
%(includes)s
static int optins = 0, asked = 0;
static unsigned launched[3];
cudaError_t cudaGetDevice(int* d) { *d = 0; return cudaSuccess; }
cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int) {
    ++asked;
    *value = attr == cudaDevAttrMultiProcessorCount ? %(sms)d : 0;
    return cudaSuccess;
}
cudaError_t cudaFuncSetAttribute(const void*, cudaFuncAttribute, int) { ++optins; return cudaSuccess; }
cudaError_t cudaGetLastError() { return cudaSuccess; }
void stub_launch(dim3 g, dim3 b, size_t shared, cudaStream_t) {
    launched[0] = g.x; launched[1] = g.y; launched[2] = g.z;
    std::printf("launch %%u %%u %%u block %%u %%u %%u shared %%zu\\n", g.x, g.y, g.z, b.x, b.y, b.z, shared);
}
%(kernels)s
int main() {
    int M, N, K;
    while (std::scanf("%%d %%d %%d", &M, &N, &K) == 3) {
%(calls)s
    }
    std::printf("sms asked %%d\\n", asked);
    std::printf("optins %%d\\n", optins);
}
"""
CALL = """        {
            dim3 g;
            if (%(k)s_grid(M, N, K, &g)) std::printf("%(name)s %%d %%d: %%u %%u %%u\\n", M, N, g.x, g.y, g.z);
            else std::printf("%(name)s %%d %%d: refused\\n", M, N);
            cudaError_t a = %(k)s_launch(nullptr, nullptr, nullptr, M, N, K);
            cudaError_t b = %(k)s_launch(nullptr, nullptr, nullptr, M, N, K);
            std::printf("%(name)s returns %%d %%d\\n", (int)a, (int)b);
        }
"""


@pytest.mark.skipif(shutil.which("g++") is None, reason="no g++")
def test_header_compiles_and_its_grid_and_launcher_agree_with_the_family(exported, tmp_path):
    includes, kernels, calls = [], [], []
    for name, (config, cu) in exported.items():
        header = LAUNCH.sub(r"stub_launch(\2); \1(\3);", cu.with_suffix(".h").read_text())
        assert header != cu.with_suffix(".h").read_text()  # the launch was there to rewrite
        (tmp_path / f"{name}.h").write_text(header)
        includes.append(f'#include "{name}.h"')
        kernels.append(f'extern "C" void {config.name}(const float*, const float*, float*, int, int, int) {{}}')
        calls.append(CALL % {"k": config.name, "name": name})
    program = tmp_path / "driver.cpp"
    program.write_text(DRIVER % {"includes": "\n".join(includes), "kernels": "\n".join(kernels),
                                 "calls": "".join(calls), "sms": STUB.sms})
    binary = tmp_path / "driver"
    subprocess.run(["g++", "-std=c++17", "-Wall", "-Werror", "-I", str(DATA / "cuda_stub"), "-o", str(binary),
                    str(program)], check=True, capture_output=True, text=True)
    shapes = [(96, 80, 40), *((m, n, 17) for m, n in SHAPES[::7]), (40000, 40000, 1), (0, 5, 5), (5, 5, 2**30)]
    run = subprocess.run([str(binary)], input="".join(f"{m} {n} {k}\n" for m, n, k in shapes),
                         capture_output=True, text=True, check=True)
    lines = run.stdout.splitlines()
    for name, (config, _) in exported.items():
        for M, N, K in shapes:
            geo = config.geometry(M, N, STUB)
            ok = (min(M, N, K) >= 1 and max(M * K, K * N, M * N) < 2**31 and geo.grid[1] <= 65535
                  and not config.family.shape_rules(config.values, M, N) and (name != "loopy" or (M, N) == (96, 80)))
            expected = f"{name} {M} {N}: " + (" ".join(map(str, geo.grid)) if ok else "refused")
            assert expected in lines, (expected, [line for line in lines if line.startswith(f"{name} {M} {N}:")])
    launches = [line for line in lines if line.startswith("launch")]
    assert f"launch 1 1 1 block 256 1 1 shared {exported['blocked'][0].geometry(96, 80).shared_bytes}" in launches
    assert exported["blocked"][0].geometry(96, 80).shared_bytes > 48 * 1024  # the premise of one opt-in
    assert lines[-1] == "optins 1"  # the blocked kernel's, once, however many launches
    assert lines[-2] == "sms asked 1"  # streamk's, once for the device, however many grids and launches
    assert "naive returns 0 0" in lines and "naive returns 1 1" in lines  # launched, and refused (0x5)


def test_python_launcher_imports_without_a_gpu_and_computes_the_grid(exported, monkeypatch):
    for name, (config, cu) in exported.items():
        module = load_module(cu.with_suffix(".py"))
        assert module.KERNEL == config.name and module.BLOCK == config.geometry(96, 80).block
        assert list(inspect.signature(module.launch).parameters) == ["A", "B", "C", "M", "N", "K", "stream"]
        assert hasattr(module, "device_sms") == (name == "streamk")  # only a grid of the device's SMs asks
        if name == "loopy":
            continue
        if name == "streamk":
            monkeypatch.setattr(module, "device_sms", lambda: STUB.sms)
        for M, N in SHAPES:
            accepted = not config.family.shape_rules(config.values, M, N) and M * N < 2**31
            if accepted:
                assert module.grid(M, N, 3) == config.geometry(M, N, STUB).grid, (name, M, N)
            else:
                with pytest.raises(ValueError):
                    module.grid(M, N, 3)
    splitk = load_module(exported["splitk"][1].with_suffix(".py"))
    with pytest.raises(ValueError, match="shape rule"):
        splitk.grid(40000, 40000, 1)
    for M, N, K in ((1.5, 8, 8), (8, True, 8), (8, 8, "8"), (8, 8, None)):  # not whole numbers: refused by name
        with pytest.raises(TypeError, match="are whole numbers"):
            splitk.grid(M, N, K)
    assert splitk.grid(np.int64(96), 80, 3) == splitk.grid(96, 80, 3)


# a streamk grid of SKB (1 to 4) x the default Limits' 132 SMs, as a number
H200_GRID = re.compile(r"\b(132|264|396|528)\b")
SMS_READ = re.compile(r"(?i)multiprocessor_?count|\bsms\b")  # the SM count asked, or read in a grid


@pytest.mark.parametrize("skb", (1, 2, 3))
def test_streamk_launchers_ask_the_device_they_launch_on_for_its_sm_count(skb, tmp_path, monkeypatch):
    config = make_config(FAMILIES["streamk"], {"SKB": skb})
    made = launchers(config, config.name, config.geometry(96, 80), (96, 80, 40), None, tmp_path / "best.cu")
    hip = launchers(config, config.name, config.geometry(96, 80), (96, 80, 40), None, tmp_path / "best.hip", lang="hip")
    for text in (made.header, made.python, hip.header):
        assert not H200_GRID.search(text), H200_GRID.search(text)
    assert "cudaDeviceGetAttribute(sms, cudaDevAttrMultiProcessorCount, device)" in made.header
    assert "hipDeviceGetAttribute(sms, hipDeviceAttributeMultiprocessorCount, device)" in hip.header
    assert "CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT" in made.python and "cuDeviceGetAttribute(" in made.python
    entry = made.grid_formula
    assert entry["c"][0] == entry["python"][0] == ("sms" if skb == 1 else f"{skb} * sms")
    assert "sms: the SM count of the device launched on" in entry["variables"]
    (tmp_path / "best.py").write_text(made.python)
    module = load_module(tmp_path / "best.py")
    for limits in (PRESETS["a100"], PRESETS["h100-pcie"]):
        monkeypatch.setattr(module, "device_sms", lambda sms=limits.sms: sms)
        assert module.grid(1024, 1024, 16384) == (skb * limits.sms, 1, 1)


def test_the_python_launcher_asks_the_driver_once_per_device(tmp_path, monkeypatch):
    """best.py's device_sms through a fake cuda-python driver: two devices, each asked once."""
    config = make_config(FAMILIES["streamk"], {})
    made = launchers(config, config.name, config.geometry(96, 80), (96, 80, 40), None, tmp_path / "best.cu")
    (tmp_path / "best.py").write_text(made.python)
    module = load_module(tmp_path / "best.py")
    current, asked, sms = [0], [], {0: 108, 1: 114}
    driver = types.ModuleType("cuda.bindings.driver")
    driver.cuInit = lambda flags: (0,)
    driver.cuCtxGetCurrent = lambda: (0, 1000 + current[0])  # a context on each device
    driver.cuCtxGetDevice = lambda: (0, current[0])
    driver.cuDeviceGetAttribute = lambda attribute, device: asked.append((attribute, device)) or (0, sms[device])
    driver.CUdevice_attribute = types.SimpleNamespace(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT=16)
    bindings = types.ModuleType("cuda.bindings")
    bindings.driver = driver
    monkeypatch.setitem(sys.modules, "cuda.bindings", bindings)
    for device in (0, 1, 0, 1, 1):
        current[0] = device
        assert module.grid(1024, 1024, 16384) == (config.values["SKB"] * sms[device], 1, 1)
    assert asked == [(16, 0), (16, 1)]


def test_other_families_launchers_do_not_ask_for_the_sm_count(tmp_path):
    """Their grids read no device number: no attribute asked, the manifest's variables and the
    exported shape's grid as before."""
    for config in configs():
        if config.family.name == "streamk":
            continue
        for lang in ("cuda", "hip"):
            made = launchers(config, config.name, config.geometry(96, 80), (96, 80, 40), None, tmp_path / "best.cu", lang)
            for text in (made.header, made.python):
                assert not SMS_READ.search(text), (config, lang, SMS_READ.search(text))
            assert "(grid {} x {} x {})".format(*config.geometry(96, 80).grid) in made.header
            assert made.grid_formula["variables"] == ("M, N: rows and columns of C (C: 64-bit integer arithmetic; "
                                                      "every value non-negative)")


class FakeArray:
    def __init__(self, shape, typestr="<f4", strides=None, readonly=False):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr, "strides": strides,
                                         "data": (12345, readonly), "version": 3}


def test_python_launcher_reads_array_interfaces(exported):
    module = load_module(exported["naive"][1].with_suffix(".py"))
    assert module._pointer(FakeArray((4, 3)), "A", (4, 3)) == 12345
    assert module._pointer(777, "A", (4, 3)) == 777
    for bad, error in ((FakeArray((3, 4)), ValueError), (FakeArray((4, 3), "<f8"), TypeError),
                       (FakeArray((4, 3), strides=(4, 16)), ValueError), (object(), TypeError)):
        with pytest.raises(error):
            module._pointer(bad, "A", (4, 3))
    with pytest.raises(ValueError, match="read-only"):
        module._pointer(FakeArray((4, 3), readonly=True), "C", (4, 3), writable=True)


def test_python_launcher_compiles_its_kernel_with_nvrtc(exported):
    pytest.importorskip("cuda.bindings.nvrtc")
    module = load_module(exported["naive"][1].with_suffix(".py"))
    assert module.compile_cubin("sm_90")[:4] == b"\x7fELF"


def test_export_writes_four_files_with_the_formula_and_the_tuned_shape(tmp_path):
    # At a shape never measured: the nearest recorded one's best, exported for the shape asked.
    out = tmp_path / "best.cu"
    result = CliRunner().invoke(cli, ["export", "--M", "1000", "--N", "999", "--K", "1001", "--db", str(PRE_BSWAP),
                                      "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert all(out.with_suffix(s).is_file() for s in (".cu", ".json", ".h", ".py"))
    manifest = json.loads(out.with_suffix(".json").read_text())
    measured = manifest["measured"]
    assert manifest["tuned_shape"] == {"M": measured["M"], "N": measured["N"], "K": measured["K"]} != manifest["shape"]
    formula = manifest["grid_formula"]
    assert eval(formula["python"][0], {}, {"M": 1000, "N": 999}) == manifest["grid"][0]  # noqa: S307
    assert formula["c"][0] in out.with_suffix(".h").read_text()
    assert f'KERNEL = "{manifest["kernel"]}"' in out.with_suffix(".py").read_text()
