import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from autotune import store
from autotune.cli import cli
from autotune.families import NAIVE, TILED
from autotune.search.loop import run_search
from autotune.space import Limits
from tests.fakes import FakeBackend


def run(*args, **kw):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False, **kw)


@pytest.mark.parametrize("command", sorted(cli.commands))
def test_every_command_has_help(command):
    result = run(command, "--help")
    assert result.exit_code == 0
    assert "Usage:" in result.output and len(cli.commands[command].help or "") > 10


@pytest.mark.parametrize("args, message", [
    (["search", "--M", "0"], "M=0 must be at least 1"),
    (["search", "--M", "4", "--family", "bogus"], "unknown family 'bogus'"),
    (["search", "--M", "4", "--compile-jobs", "0"], "--compile-jobs': 0 must be a whole number from 1 to 256"),
    (["render", "--family", "tiled", "-p", "T=12"], "T=12 is outside the space"),
    (["render", "--family", "tiled", "-p", "T"], "is not NAME=VALUE"),
    (["render", "--family", "tiled", "-p", "Q=1"], "has no parameter 'Q'"),
    (["render", "-p", "T=32"], "-p needs --family"),
    (["render", "--family", "tiled", "-p", "T=64", "-p", "bx=64", "-p", "by=64"], "threads per block"),
])
def test_bad_input_is_one_line_and_exit_2(args, message, tmp_path):
    result = run(*args, "--db", str(tmp_path / "x.sqlite")) if args[0] == "search" else run(*args)
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], result.output


def test_search_without_gpu_says_so_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr("autotune.backends.cuda.device.device_count", lambda: 0)
    result = run("search", "--M", "64", "--db", str(tmp_path / "x.sqlite"))
    assert result.exit_code == 2
    assert result.output.strip() == ("error: no CUDA device found: run on a machine with an NVIDIA GPU and "
                                     "driver, or use --backend sim with M*N*K at most 2**27 (about --M 512), or "
                                     "--backend replay --replay-db FILE (a recorded results database)")
    assert not (tmp_path / "x.sqlite").exists()  # nothing written


def test_render_prints_the_kernel():
    result = run("render", "--family", "tiled", "-p", "T=16", "-p", "pad=1")
    assert result.exit_code == 0
    assert 'extern "C" __global__' in result.output and "sgemm_tiled_T16_bx16_by16_xcols_pad1" in result.output


def test_space_lists_constraints():
    result = run("space", "--family", "tiled")
    assert "784 valid of 1960" in result.output and "constraint: bx must divide T" in result.output


def test_space_counts_the_sub_space_that_p_leaves():
    """-p narrows the space as search -p does: tiled with T=32 alone, one of its five tile edges."""
    from autotune.families import TILED
    from autotune.space import Limits, count_valid, narrow

    result = run("space", "--family", "tiled", "-p", "T=32")
    narrowed = narrow(TILED, {"T": ["32"]})
    assert result.exit_code == 0, result.output
    assert f"{count_valid(narrowed, Limits())} valid of 392" in result.output and "  T       32  default" in result.output
    assert count_valid(narrowed, Limits()) < 784
    refused = run("space", "--family", "tiled", "-p", "T=7")
    assert refused.exit_code == 2 and refused.output.startswith("error: T=7 is outside the space")


@pytest.fixture
def filled_db(tmp_path):
    path = tmp_path / "r.sqlite"
    db = store.open_db(path)
    backend = FakeBackend(64, 64, 64)
    backend.name = "cuda"  # best/export read GPU results
    run_search(db, backend, [NAIVE, TILED], Limits(), sampler="random", trials=30, seed=3)
    return path, db


def test_best_reads_the_database(filled_db):
    path, db = filled_db
    expected = min((r for r in db.query("select * from results where status='ok'")), key=lambda r: r["time_ms"])
    result = run("best", "--M", "64", "--db", str(path))
    assert result.exit_code == 0 and expected["kernel"] in result.output and "% of cuBLAS" in result.output
    as_json = json.loads(run("best", "--M", "64", "--db", str(path), "--json").output)
    assert as_json["id"] == expected["id"]


def test_best_with_nothing_recorded(tmp_path):
    # An existing database without results (a missing file is another error: test_user_commands).
    path = tmp_path / "empty.sqlite"
    store.open_db(path).conn.close()
    result = run("best", "--M", "64", "--db", str(path))
    assert result.exit_code == 2 and "run `autotune search --M 64" in result.output
    assert "from backend cuda" in result.output


def test_best_points_at_the_backend_that_has_results(filled_db):
    # Only sim rows at this shape: the line says so, instead of only "run a search".
    path, db = filled_db
    db.execute("update results set backend = 'sim'")
    db.conn.commit()
    result = run("best", "--M", "64", "--db", str(path))
    assert result.exit_code == 2 and "it has some from backend sim (pass --backend)" in result.output


def test_export_writes_source_and_manifest(filled_db, tmp_path):
    path, db = filled_db
    out = tmp_path / "best.cu"
    result = run("export", "--M", "64", "--db", str(path), "-o", str(out))
    assert result.exit_code == 0, result.output
    best = store.best(db, (64, 64, 64))
    manifest = json.loads(out.with_suffix(".json").read_text())
    assert manifest["kernel"] == best["kernel"] and manifest["measured"]["id"] == best["id"]
    assert manifest["shape"] == {"M": 64, "N": 64, "K": 64}
    assert out.read_text() == store.source(db, best["source_hash"])
    assert manifest["grid"][0] >= 1 and manifest["block"][0] * manifest["block"][1] >= 1


def test_export_by_id_and_by_params(filled_db, tmp_path):
    path, db = filled_db
    row = next(db.query("select * from results where status='ok' and family='tiled' limit 1"))
    out = tmp_path / "by_id.cu"
    assert run("export", "--M", "64", "--db", str(path), "--id", str(row["id"]), "-o", str(out)).exit_code == 0
    assert json.loads(out.with_suffix(".json").read_text())["kernel"] == row["kernel"]
    out2 = tmp_path / "named.cu"
    result = run("export", "--M", "64", "--db", str(path), "--family", "naive", "-p", "x_over=rows", "-o", str(out2))
    assert result.exit_code == 0 and "sgemm_naive_xrows_bx32_by8" in out2.read_text()


def test_export_refuses_bad_file_names(filled_db, tmp_path):
    path, _ = filled_db
    result = run("export", "--M", "64", "--db", str(path), "-o", str(tmp_path / "best.txt"))
    assert result.exit_code == 2 and "must end in .cu" in result.output
    result = run("export", "--M", "64", "--db", str(path), "-o", str(tmp_path / "nowhere" / "best.cu"))
    assert result.exit_code == 2 and "does not exist" in result.output


def test_corrupt_database_is_one_line(tmp_path):
    bad = tmp_path / "bad.sqlite"
    bad.write_bytes(b"this is not a database" * 100)
    result = run("best", "--M", "64", "--db", str(bad))
    assert result.exit_code == 2 and result.output.startswith("error: cannot open database")


def test_checkout_shim_runs_without_install(tmp_path):
    out = subprocess.run([sys.executable, "cli.py", "--help"], capture_output=True, text=True)
    assert out.returncode == 0 and "search" in out.stdout


def test_verify_on_the_emulator_prints_a_table():
    result = run("verify", "--family", "naive,tiled", "--limit", "2", "--shape", "17x33x9")
    assert result.exit_code == 0, result.output
    assert "4 passed, 0 failed" in result.output and "sgemm_tiled_" in result.output


def test_verify_bad_shape_is_one_line():
    result = run("verify", "--shape", "17x33")
    assert result.exit_code == 2 and "is not MxNxK" in result.output


def test_search_on_the_emulator_records_sim_rows(tmp_path):
    path = tmp_path / "sim.sqlite"
    result = run("search", "--backend", "sim", "--M", "24", "--N", "20", "--K", "9", "--family", "tiled",
                 "--trials", "3", "--db", str(path))
    assert result.exit_code == 0, result.output
    db = store.open_db(path)
    rows = list(db.query("select backend, status from results where status != 'invalid'"))
    assert len(rows) == 3 and all(r["backend"] == "sim" and r["status"] == "ok" for r in rows)
    assert run("best", "--M", "24", "--N", "20", "--K", "9", "--db", str(path)).exit_code == 2  # no GPU bests
    assert run("best", "--backend", "sim", "--M", "24", "--N", "20", "--K", "9", "--db", str(path)).exit_code == 0


def test_search_on_the_emulator_refuses_large_shapes(tmp_path):
    result = run("search", "--backend", "sim", "--M", "4096", "--db", str(tmp_path / "x.sqlite"))
    assert result.exit_code == 2 and "too large for the emulator" in result.output


def test_compile_jobs_reach_the_search(tmp_path, monkeypatch):
    import autotune.search.loop

    seen = {}
    real = autotune.search.loop.run_search

    def spy(*args, **kwargs):
        seen["compile_jobs"] = kwargs.get("compile_jobs")
        return real(*args, **kwargs)

    monkeypatch.setattr(autotune.search.loop, "run_search", spy)
    result = run("search", "--backend", "sim", "--M", "24", "--N", "20", "--K", "9", "--family", "tiled",
                 "--trials", "1", "--compile-jobs", "3", "--db", str(tmp_path / "x.sqlite"))
    assert result.exit_code == 0, result.output
    assert seen["compile_jobs"] == 3  # the emulator compiles nothing ahead; a GPU search would use 3 processes


def test_export_writes_the_source_that_was_measured(filled_db, tmp_path):
    """After a template change the best row's stored source, not today's render, is exported."""
    path, db = filled_db
    best = store.best(db, (64, 64, 64))
    recorded = "// as timed, before a template change\n" + store.source(db, best["source_hash"])
    db["sources"].update(best["source_hash"], {"source": recorded})
    out = tmp_path / "best.cu"
    assert run("export", "--M", "64", "--db", str(path), "-o", str(out)).exit_code == 0
    assert out.read_text() == recorded
    assert json.loads(out.with_suffix(".json").read_text())["source_hash"] == best["source_hash"]


def test_best_answers_under_a_contract(tmp_path):
    """A faster tensor-core row beside an FP32 row: `best` (contract fp32 by default) gives the FP32
    row, `best --precision fp32-tc` the tensor-core one."""
    path = tmp_path / "p.sqlite"
    db = store.open_db(str(path))
    row = {"backend": "cuda", "M": 64, "N": 64, "K": 64, "status": "ok", "cublas_ms": 0.01, "gpu_name": "NVIDIA H200"}
    db["results"].insert_all([{**row, "family": "blocked", "kernel": "fp32 row", "time_ms": 0.02},
                              {**row, "family": "tf32x3wg", "kernel": "tensor-core row", "time_ms": 0.005}], alter=True)
    db.close()
    for extra, kernel in (((), "fp32 row"), (("--precision", "fp32-tc"), "tensor-core row")):
        result = run("best", "--M", "64", "--db", str(path), "--json", *extra)
        assert result.exit_code == 0, result.output
        assert json.loads(result.output)["kernel"] == kernel
