"""`autotune export --lang hip`: the same render translated to HIP (codegen.hip), refused with one
line where HIP cannot express a kernel, and compiled with hipcc for an AMD target: compile-checked,
not run (there is no AMD GPU). Without hipcc the compile test skips, except under CI (CI set),
where hipcc is required so that the check cannot silently vanish."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from click.testing import CliRunner

from autotune import store
from autotune.cli import cli
from autotune.codegen.hip import CHECK_ARCH
from autotune.codegen.render import render
from autotune.families import FAMILIES, TENSOR_CORE
from autotune.space import make_config

SHAPE = ["--M", "96", "--N", "80", "--K", "40"]
# Each family HIP supports, at its default config (blocked's has ASYNC=0) but for HIP_PARAMS (skinny's
# and tall's defaults copy with cp.async: SA=0 reads A from global memory, ST=0 loads it into registers);
# the tensor-core ones are refused (inline PTX: mma.sync, wgmma).
EXPORTED = [name for name in FAMILIES if name not in TENSOR_CORE]
HIP_PARAMS = {"skinny": {"SA": 0}, "tall": {"ST": 0}}
WAVE64_ARCH = "gfx90a"  # CDNA2: 64-lane waves
WITH_PARAMS = {"blocked-pb": ["-p", "TB=1", "-p", "PB=1"]}  # a second kernel, and a workspace in the launcher


def run(*args):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.fixture(scope="module")
def empty_db(tmp_path_factory):
    path = tmp_path_factory.mktemp("hipdb") / "empty.sqlite"
    store.open_db(path).conn.close()
    return str(path)


@pytest.fixture(scope="module")
def exported(tmp_path_factory, empty_db):
    """Each EXPORTED family's default config, exported as HIP into one folder."""
    folder = tmp_path_factory.mktemp("hip")
    for name in EXPORTED:
        params = [a for k, v in HIP_PARAMS.get(name, {}).items() for a in ("-p", f"{k}={v}")]
        result = run("export", *SHAPE, "--family", name, *params, "--db", empty_db, "--lang", "hip",
                     "-o", str(folder / f"{name}.hip"))
        assert result.exit_code == 0, result.output
    for name, params in WITH_PARAMS.items():
        result = run("export", *SHAPE, "--family", name.split("-")[0], *params, "--db", empty_db, "--lang", "hip",
                     "-o", str(folder / f"{name}.hip"))
        assert result.exit_code == 0, result.output
    return folder


def test_hip_export_writes_kernel_header_and_manifest_only(exported):
    for name in EXPORTED:
        config = make_config(FAMILIES[name], HIP_PARAMS.get(name, {}))
        source = (exported / f"{name}.hip").read_text()
        assert "#include <hip/hip_runtime.h>" in source and "not run" in source
        assert not re.search(r"_sync\(|__ldcg\(|__launch_bounds__\([^,()]+,", source)  # CUDA-only forms gone
        assert ("#error" in source) == bool(FAMILIES[name].hip.wave32)
        header = (exported / f"{name}.h").read_text()
        assert "hipError_t" in header and "cuda" not in header.replace(f"{name}.hip", "")
        info = json.loads((exported / f"{name}.json").read_text())
        assert info["lang"] == "hip" and info["kernel"] == config.name and "not run" in info["hip"]["checked"]
        assert info["hip"]["wavefront"].startswith("32 only" if FAMILIES[name].hip.wave32 else "any")
        assert not (exported / f"{name}.py").exists()
    blocked = json.loads((exported / "blocked.json").read_text())
    assert blocked["needs_shared_optin"] and blocked["shared_optin"].startswith("hipFuncSetAttribute(")
    assert "hipFuncSetAttribute(" in (exported / "blocked.h").read_text()


def test_the_hip_kernel_is_the_cuda_render_translated(exported):
    # no second copy of the kernels: the CUDA render's lines, but for the ones a translation rewrote
    config = make_config(FAMILIES["naive"], {})
    cuda = render(config).splitlines()
    hip = (exported / "naive.hip").read_text().splitlines()
    assert hip[-len(cuda):][:3] == cuda[:3] and sum(a != b for a, b in zip(hip[-len(cuda):], cuda)) <= 2


@pytest.mark.parametrize("args, says", [
    (["--family", "blocked", "-p", "ASYNC=1", "-p", "STAGES=3"], ["inline PTX (cp.async)", "-p ASYNC=0"]),
    (["--family", "skinny"], ["inline PTX (cp.async)", "-p SA=0 -p SB=0"]),  # the default copies A and B with cp.async
    (["--family", "tall"], ["inline PTX (cp.async)", "-p ST=0"]),  # the default's stages are filled by cp.async
    (["--family", "tf32x3"], ["mma.sync", "FP32 family"]),
    pytest.param(["--family", "tf32x3wg"], ["wgmma.fence", "FP32 family"], marks=pytest.mark.skipif(
        "tf32x3wg" not in FAMILIES, reason="no tf32x3wg family yet")),
    (["--family", "blocked", "-p", "BK=32", "-p", "BM=256"], ["132096 bytes", "at most 65536"]),
])
def test_what_hip_cannot_express_is_refused_in_one_line(args, says, empty_db, tmp_path):
    result = run("export", *SHAPE, *args, "--db", empty_db, "--lang", "hip", "-o", str(tmp_path / "k.hip"))
    assert result.exit_code == 2 and result.output.startswith("error: ") and result.output.count("\n") == 1
    assert all(s in result.output for s in says), result.output
    assert not list(tmp_path.iterdir())  # nothing written


def test_the_file_suffix_matches_the_language(empty_db, tmp_path):
    result = run("export", *SHAPE, "--family", "naive", "--db", empty_db, "--lang", "hip", "-o", str(tmp_path / "k.cu"))
    assert result.exit_code == 2 and "must end in .hip for --lang hip" in result.output


# ----------------------------------------------------------------- hipcc, for an AMD target

HIP_HOST = """
#include <hip/hip_runtime.h>
%(includes)s
int main() {
    hipError_t err = hipSuccess;
%(calls)s
    return err == hipSuccess ? 0 : 1;
}
"""


def hipcc(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "HIP_PLATFORM": "amd"}  # else hipcc picks nvcc where CUDA is installed
    return subprocess.run(["hipcc", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def needs_hipcc():
    if shutil.which("hipcc") is None:
        if os.environ.get("CI"):
            pytest.fail("CI is set but hipcc is missing: .ci/run installs it (apt-get install hipcc)")
        pytest.skip("no hipcc (Debian: apt-get install --no-install-recommends hipcc); required when CI is set")


def outcome_of_needs_hipcc() -> type | None:
    try:
        needs_hipcc()
    except (pytest.fail.Exception, pytest.skip.Exception) as exc:  # caught here, so a skip cannot pass as one
        return type(exc)
    return None


def test_a_missing_hipcc_skips_but_fails_under_ci(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.setenv("CI", "1")
    assert outcome_of_needs_hipcc() is pytest.fail.Exception
    monkeypatch.delenv("CI")
    assert outcome_of_needs_hipcc() is pytest.skip.Exception


def test_hipcc_compiles_every_export_for_an_amd_target(exported):
    needs_hipcc()
    # -O0: the check is whether HIP accepts each source, and optimising adds seconds, not errors
    # (tailsplit: 8 s at -O3), and CI has two cores for the whole suite.
    device = [(name, CHECK_ARCH, "-O0") for name in [*EXPORTED, *WITH_PARAMS]] + [("naive", WAVE64_ARCH, "-O0"),
                                                                                  ("tall", WAVE64_ARCH, "-O0")]
    includes = "\n".join(f'#include "{name}.h"' for name in [*EXPORTED, *WITH_PARAMS])
    kernels = ([make_config(FAMILIES[n], HIP_PARAMS.get(n, {})).name for n in EXPORTED]
               + [make_config(FAMILIES["blocked"], {"TB": 1, "PB": 1}).name])
    calls = "\n".join(f"    err = {k}_launch(nullptr, nullptr, nullptr, 96, 80, 40);" for k in kernels)
    (exported / "host.hip").write_text(HIP_HOST % {"includes": includes, "calls": calls})

    def compile_one(job: tuple[str, str, str]) -> subprocess.CompletedProcess:
        name, arch, level = job
        if name == "host":  # the headers, against the HIP runtime: host side only
            return hipcc("--cuda-host-only", "-std=c++17", "-c", "host.hip", "-o", "host.o", cwd=exported)
        return hipcc(level, f"--offload-arch={arch}", "--cuda-device-only", "-std=c++17", "-c", f"{name}.hip",
                     "-o", f"{name}-{arch}{level}.o", cwd=exported)

    jobs = [*device, ("host", "", "")]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        done = dict(zip(jobs, pool.map(compile_one, jobs)))
    failed = {job: r.stderr[-2000:] for job, r in done.items() if r.returncode != 0 and job[:2] != ("tall", WAVE64_ARCH)}
    assert not failed, failed
    # a wave32-only kernel stops a wave64 build with its reason
    wave64 = done[("tall", WAVE64_ARCH, "-O0")]
    assert wave64.returncode != 0 and "needs 32-lane waves" in wave64.stderr, wave64.stderr[-2000:]
