"""`autotune profile`: ncu's raw CSV as a record, the command's one-line errors (no ncu, ncu not
permitted, no GPU), the profiles table (written only by a profile, read by the report), and
on a GPU host the real thing: the blocked default's FFMA count at 1024^3 is M*N*K."""
from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from autotune import store
from autotune.cli import cli
from autotune.codegen.render import render, sha256
from autotune.errors import AutotuneError
from autotune.explain import ncu
from autotune.explain.page import write_page
from autotune.explain.report import build
from autotune.families import FAMILIES, TILED
from autotune.space import make_config
from tests.names import tags

FIXTURE = Path(__file__).resolve().parent / "data" / "ncu_raw_tiled_1024.csv"
FIXTURE_KERNEL = "sgemm_tiled_T16_bx16_by16_xcols_pad0"  # the launch the fixture profiled
SHAPE = (1024, 1024, 1024)
TILED16 = ["--M", "1024", "--family", "tiled", "-p", "T=16"]
PERMISSION = ("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance "
              "Counters on the target device 0.")


def fixture_cells(kernel: str) -> dict[str, str]:
    """The fixture's row of a kernel, read with plain string handling (not the parser under test)."""
    lines = [line for line in FIXTURE.read_text().splitlines() if line.startswith('"')]
    header = [c.strip('"') for c in lines[0].split('","')]
    row = next(line for line in lines if f'"{kernel}"' in line)
    return dict(zip(header, [c.strip('"') for c in row.split('","')]))


def as_number(cell: str) -> float:
    return float(cell.replace(",", ""))


# ----------------------------------------------------------------------------- the CSV

def test_parser_reads_the_kernels_row_in_base_units():
    p = ncu.parse_raw_csv(FIXTURE.read_text(), FIXTURE_KERNEL)
    cells = fixture_cells(FIXTURE_KERNEL)
    assert p.kernel == FIXTURE_KERNEL
    assert p.time_ms == pytest.approx(as_number(cells["gpu__time_duration.sum"]) * 1e-6)  # nsecond -> ms
    assert p.ffma == as_number(cells[ncu.METRICS["ffma"]])  # "1,073,741,824": thousands separators
    assert p.sectors_per_request == pytest.approx(
        as_number(cells[ncu.METRICS["ld_sectors"]]) / as_number(cells[ncu.METRICS["ld_requests"]]))
    assert p.dram_bytes == as_number(cells["dram__bytes_read.sum"]) + as_number(cells["dram__bytes_write.sum"])
    assert p.dram_pct == as_number(cells[ncu.METRICS["dram_pct"]])
    listed = {r for r in ncu.STALLS if ncu.stall_metric(r) in cells}
    assert set(p.stalls) == listed and listed  # stalls ncu did not print are left out, not zero
    top = max(listed, key=lambda r: as_number(cells[ncu.stall_metric(r)]))
    assert p.top_stalls()[0][0] == top


def test_parser_refuses_a_missing_kernel_or_table():
    with pytest.raises(AutotuneError, match="no launch of sgemm_other"):
        ncu.parse_raw_csv(FIXTURE.read_text(), "sgemm_other")
    with pytest.raises(AutotuneError, match="no CSV table"):
        ncu.parse_raw_csv("==PROF== Disconnected from process 1\n", FIXTURE_KERNEL)
    without_ffma = FIXTURE.read_text().replace(ncu.METRICS["ffma"], "some_other.sum")
    with pytest.raises(AutotuneError, match=ncu.METRICS["ffma"]):
        ncu.parse_raw_csv(without_ffma, FIXTURE_KERNEL)


def test_numbers_in_other_units():
    assert ncu.number("2,912", "usecond") == pytest.approx(2.912)
    assert ncu.number("1.5", "Kbyte") == 1500
    assert ncu.number("n/a", "") is None


# ----------------------------------------------------------------------------- the command's errors

def fake_ncu(folder: Path, body: str) -> Path:
    """An `ncu` on PATH that runs `body` (Python) instead of profiling."""
    folder.mkdir(exist_ok=True)
    path = folder / "ncu"
    path.write_text(f"#!{sys.executable}\nimport sys\n{body}\n")
    path.chmod(0o755)
    return path


def one_line_error(result) -> str:
    assert result.exit_code == 2, (result.output, result.exception)
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    return lines[0]


def profile(tmp_path: Path, env: dict, *extra: str):
    db = tmp_path / "db.sqlite"
    return CliRunner().invoke(cli, ["profile", *TILED16, "--db", str(db), *extra], env=env), db


@pytest.fixture
def gpu_answers(monkeypatch):
    """The device probe says a GPU is there (what a GPU host says), so ncu's own errors are reached."""
    monkeypatch.setattr("autotune.backends.cuda.device.no_device_reason", lambda: None)


def test_no_ncu_on_path_is_one_line(tmp_path, gpu_answers):
    (tmp_path / "empty").mkdir()
    result, db = profile(tmp_path, {"PATH": str(tmp_path / "empty"), "AUTOTUNE_NCU": None})
    line = one_line_error(result)
    assert "Nsight Compute (ncu) is not on PATH" in line and "AUTOTUNE_NCU" in line
    assert not db.exists()


def test_autotune_ncu_that_is_not_a_program_is_one_line(tmp_path, gpu_answers):
    result, db = profile(tmp_path, {"AUTOTUNE_NCU": str(tmp_path / "nowhere" / "ncu")})
    assert "is not an executable file" in one_line_error(result)
    assert not db.exists()


def test_ncu_not_permitted_is_one_line(tmp_path, gpu_answers):
    bin_ = tmp_path / "bin"
    fake_ncu(bin_, f"print({PERMISSION!r})\nsys.exit(1)")
    result, db = profile(tmp_path, {"PATH": str(bin_), "AUTOTUNE_NCU": None})
    line = one_line_error(result)
    assert "may not profile" in line and "ERR_NVGPUCTRPERM" in line and "CAP_SYS_ADMIN" in line
    assert not db.exists()


def test_no_gpu_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr("autotune.backends.cuda.device.no_device_reason", lambda: "no CUDA device found")
    bin_ = tmp_path / "bin"
    fake_ncu(bin_, "sys.exit(0)")
    result, db = profile(tmp_path, {"PATH": str(bin_), "AUTOTUNE_NCU": None})
    assert "no CUDA device found" in one_line_error(result)
    assert not db.exists()


def test_a_failing_program_under_ncu_is_one_line(tmp_path, gpu_answers):
    bin_ = tmp_path / "bin"
    fake_ncu(bin_, "print('==PROF== Connected to process 1')\nprint('error: sgemm_x does not compile', "
                   "file=sys.stderr)\nprint('==WARNING== No kernels were profiled.')\nsys.exit(2)")
    result, db = profile(tmp_path, {"PATH": str(bin_), "AUTOTUNE_NCU": None})
    assert "profiled nothing (exit status 2): error: sgemm_x does not compile" in one_line_error(result)


# ----------------------------------------------------------------------------- a profile, stored

@pytest.fixture
def recording_ncu(tmp_path, gpu_answers, monkeypatch) -> Path:
    """An ncu that keeps its arguments, the runner and the kernel it was given, and prints the fixture's
    table for the kernel asked for; on a GPU host named H200."""
    monkeypatch.setattr("autotune.api.profile.gpu_facts",
                        lambda device: {"gpu_name": "NVIDIA H200", "gpu_uuid": "GPU-1", "arch": "sm_90"})
    seen = tmp_path / "seen"
    seen.mkdir()
    fake_ncu(tmp_path / "bin", f"""import json, shutil, pathlib
args = sys.argv[1:]
json.dump(args, open({str(seen / 'args.json')!r}, 'w'))
shutil.copy(args[-1], {str(seen / 'runner.py')!r})
shutil.copy(pathlib.Path(args[-1]).parent / 'kernel.cu', {str(seen / 'kernel.cu')!r})
kernel = args[args.index('--kernel-name') + 1]
print(open({str(FIXTURE)!r}).read().replace({FIXTURE_KERNEL!r}, kernel))""")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.delenv("AUTOTUNE_NCU", raising=False)
    return seen


def test_profile_runs_ncu_on_the_runner_and_stores_measured_beside_modelled(tmp_path, recording_ncu):
    seen = recording_ncu
    result, db = profile(tmp_path, {})
    assert result.exit_code == 0, (result.output, result.exception)
    config = make_config(TILED, {"T": 16})
    args = json.loads((seen / "args.json").read_text())
    for flag, value in (("--clock-control", "none"), ("--page", "raw"), ("--kernel-name", config.name)):
        assert args[args.index(flag) + 1] == value
    assert "--csv" in args and args[-2] == sys.executable
    compile(Path(seen / "runner.py").read_text(), "runner.py", "exec")  # the runner script is Python

    rows = store.profiles(store.open_readonly(db), SHAPE, "NVIDIA H200")
    assert len(rows) == 1
    row = rows[0]
    cells = fixture_cells(FIXTURE_KERNEL)
    assert row["kernel"] == config.name and row["result_id"] is None and row["family"] == "tiled"
    assert row["ffma"] == as_number(cells[ncu.METRICS["ffma"]]) and row["model_ffma"] == 1024 ** 3
    assert row["stall_mio_throttle"] == as_number(cells[ncu.stall_metric("mio_throttle")])
    assert row["model_dram_floor"] < row["model_dram_tiles"]
    assert config.name in result.output and "FFMA" in result.output and "mio_throttle" in result.output


def test_a_profile_of_a_kernel_with_a_prologue_says_the_prologue_is_not_in_it(tmp_path, recording_ncu):
    db = tmp_path / "db.sqlite"
    args = ["profile", "--M", "64", "--family", "blocked", "-p", "TB=1", "-p", "BM=64", "-p", "BN=64", "--db", str(db)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, (result.output, result.exception)
    kernel = make_config(FAMILIES["blocked"], {"TB": 1, "BM": 64, "BN": 64}).name
    assert "PB1" in tags(kernel) and f"its prologue {kernel}_pre" in result.output


# ----------------------------------------------------------------------------- the table

def a_profile(kernel: str = FIXTURE_KERNEL, shape=SHAPE, gpu: str = "NVIDIA H200") -> dict:
    M, N, K = shape
    return {"result_id": 1, "kernel": kernel, "family": "tiled", "M": M, "N": N, "K": K, "gpu_name": gpu,
            "gpu_uuid": "GPU-1", "time_ms": 1.25, "ffma": float(M * N * K), "model_ffma": M * N * K,
            "stall_mio_throttle": 6.5, "stall_barrier": 1.5}


def test_profiles_round_trip_by_shape_and_gpu(tmp_path):
    db = store.open_db(tmp_path / "db.sqlite")
    # a first row without a result or a model must not make those columns text
    store.insert_profile(db, {**a_profile(gpu="other"), "result_id": None, "model_ffma": None, "model_binding": None})
    mine = store.insert_profile(db, {**a_profile(), "model_binding": "shared"})
    store.insert_profile(db, a_profile(shape=(512, 512, 512)))
    store.insert_profile(db, a_profile(gpu="NVIDIA A100"))
    got = store.profiles(db, SHAPE, "NVIDIA H200")
    assert [r["id"] for r in got] == [mine["id"]]
    assert {k: got[0][k] for k in a_profile()} == a_profile() and got[0]["model_binding"] == "shared"
    assert type(got[0]["result_id"]) is int and type(got[0]["model_ffma"]) is float
    assert len(store.profiles(db)) == 4


def test_only_a_profile_creates_the_table(tmp_path):
    path = tmp_path / "db.sqlite"
    store.open_db(path).conn.close()  # what a search makes
    before = path.read_bytes()
    readonly = store.open_readonly(path)
    assert store.profiles(readonly, SHAPE) == []
    readonly.conn.close()
    assert path.read_bytes() == before
    assert "profiles" not in sqlite3.connect(path).execute("select group_concat(name) from sqlite_master").fetchone()[0]


def report_db(tmp_path: Path, with_profile: bool) -> Path:
    path = tmp_path / "report.sqlite"
    db = store.open_db(path)
    config = make_config(TILED, {"T": 16})
    store.insert_result(db, {**config.values, "kernel": config.name, "family": "tiled", "backend": "cuda",
                             "M": 1024, "N": 1024, "K": 1024, "status": "ok", "time_ms": 1.2, "time_ms_min": 1.1,
                             "time_ms_max": 1.3, "tflops": 1.79, "gpu_name": "NVIDIA H200", "source_hash": "x"})
    if with_profile:
        store.insert_profile(db, a_profile(config.name))
    db.conn.close()
    return path


@pytest.mark.parametrize("with_profile", [True, False])
def test_report_shows_measured_against_modelled(tmp_path, monkeypatch, with_profile):
    monkeypatch.setattr("autotune.explain.counts.have_nvdisasm", lambda: False)  # the page, not the model
    data = build(str(report_db(tmp_path, with_profile)), SHAPE)
    page = write_page([data], tmp_path).read_text()
    assert ("## Profiled with Nsight Compute" in page) == with_profile
    if with_profile:
        row = next(line for line in page.splitlines() if line.startswith(f"| `{FIXTURE_KERNEL}` |"))
        assert "mio_throttle 6.5" in row and f"{1024 ** 3:.6g} / {1024 ** 3:.6g}" in row


# ----------------------------------------------------------------------------- on the GPU

@pytest.mark.gpu
def test_blocked_default_does_one_ffma_per_multiply_add(tmp_path):
    try:
        ncu.find_ncu()
    except AutotuneError as exc:
        pytest.skip(str(exc))
    db = tmp_path / "db.sqlite"
    result = CliRunner().invoke(cli, ["profile", "--M", "1024", "--family", "blocked", "--db", str(db)])
    assert result.exit_code == 0, (result.output, result.exception)
    [row] = store.profiles(store.open_readonly(db), SHAPE)
    assert row["ffma"] == 1024 ** 3 == row["model_ffma"]
    assert row["time_ms"] > 0 and row["shared_wavefronts"] > 0 and row["sectors_per_request"] > 0


def test_profile_of_the_best_row_runs_its_stored_source(tmp_path, recording_ncu):
    db_path = report_db(tmp_path, with_profile=False)
    db = store.open_db(db_path)
    stored = "// the source that was timed\n" + render(make_config(TILED, {"T": 16}))
    [row] = store.results(db, SHAPE)
    db.execute("UPDATE results SET source_hash = ? WHERE id = ?", [sha256(stored), row["id"]])
    db.conn.commit()
    store.insert_source(db, sha256(stored), row["kernel"], "tiled", stored)
    result = CliRunner().invoke(cli, ["profile", "--M", "1024", "--db", str(db_path)])
    assert result.exit_code == 0, (result.output, result.exception)
    assert (recording_ncu / "kernel.cu").read_text() == stored
    [profiled] = store.profiles(store.open_readonly(db_path), SHAPE)
    assert profiled["result_id"] == row["id"] and profiled["source_hash"] == sha256(stored)


@pytest.mark.parametrize(("extra", "family"), (((), "tiled"), (("--precision", "fp32-tc"), "tf32x3")))
def test_profile_of_the_best_row_follows_the_contract(tmp_path, recording_ncu, extra, family):
    """A faster tensor-core row beside the FP32 one: the profile's best is the FP32 row unless the
    caller admits tensor cores (--precision fp32-tc), as for `best` and `export`."""
    db_path = report_db(tmp_path, with_profile=False)
    db = store.open_db(db_path)
    tc = make_config(FAMILIES["tf32x3"], {})
    store.insert_result(db, {**tc.values, "kernel": tc.name, "family": "tf32x3", "backend": "cuda", "M": 1024, "N": 1024,
                             "K": 1024, "status": "ok", "time_ms": 0.5, "gpu_name": "NVIDIA H200", "source_hash": "y"})
    db.conn.close()
    result = CliRunner().invoke(cli, ["profile", "--M", "1024", "--db", str(db_path), *extra])
    assert result.exit_code == 0, (result.output, result.exception)
    [profiled] = store.profiles(store.open_readonly(db_path), SHAPE)
    assert profiled["family"] == family

