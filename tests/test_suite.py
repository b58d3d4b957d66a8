"""`autotune suite`: the committed shapes file, a whole suite on the emulator and on a replayed
H200 dataset (JSON, markdown, PNG; our time and cuBLAS's from the same row), its budget, and
bad input as one line."""
import json
import math
import sqlite3
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from autotune.api.suite import SuiteOptions, read_shapes, run_suite, shape_timeout, stem
from autotune.cli import cli
from autotune.explain.model import PRESETS
from autotune.explain.roofline import roofline
from autotune.explain.suite import Suite, SuiteRow, SuiteShape
from autotune.families import NAIVE

ROOT = Path(__file__).resolve().parent.parent
SHAPES = ROOT / "autotune" / "api" / "shapes.toml"
# A replayed search measures each family's default first, so the dataset must hold today's defaults:
# the H200 suite pass's database holds them (every suite shape, the defaults among its rows)
H200_SUITE_DB = ROOT / "benchmarks" / "data" / "h200-suite.sqlite.gz"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
H200 = PRESETS["h200"]


def invoke(*args: str):
    return CliRunner().invoke(cli, ["suite", *map(str, args)])


def shapes_file(tmp_path: Path, *shapes: tuple[int, int, int, str], text: str | None = None) -> Path:
    path = tmp_path / "shapes.toml"
    body = ",\n".join(f'  {{ group = "{g}", M = {M}, N = {N}, K = {K} }}' for M, N, K, g in shapes)
    path.write_text(text if text is not None else f"shapes = [\n{body}\n]\n")
    return path


def ok_rows(db: Path, shape: tuple[int, int, int]) -> list[dict]:
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    rows = [dict(r) for r in conn.execute("select * from results where status = 'ok' and M = ? and N = ? and K = ?",
                                          shape)]
    conn.close()
    return rows


# ---------------------------------------------------------------------------------------------
# the committed shapes file


def test_the_committed_suite_has_every_group_the_issue_names():
    shapes = read_shapes(SHAPES)
    assert len(shapes) >= 36
    groups = {s.group for s in shapes}
    assert groups == {"large", "non-multiple", "skinny-m", "skinny-n", "deep-k", "shallow-k", "small", "llm",
                      "few-tiles"}
    few = [s for s in shapes if s.group == "few-tiles"]
    assert len(few) >= 8 and all(s.K >= min(s.M, s.N) for s in few)  # few tiles, K at least C's side
    have = {s.shape for s in shapes}
    wanted = {(2048,) * 3, (4096,) * 3, (8192,) * 3, (4000,) * 3, (4097, 4095, 4093),
              (1024, 1024, 65536), (256, 256, 262144), (8192, 8192, 64), (8192, 8192, 128),
              (256,) * 3, (512,) * 3, (1024,) * 3, (4096, 11008, 4096), (2048, 4096, 14336), (16, 4096, 14336)}
    wanted |= {(m, 8192, 8192) for m in (1, 8, 16, 64, 128)} | {(m, 14336, 4096) for m in (1, 8, 16, 64, 128)}
    assert wanted <= have, wanted - have
    assert any(s.N < 256 and s.M >= 4096 for s in shapes)  # skinny N
    assert read_shapes(SHAPES, ("llm", "small")) == [s for s in shapes if s.group in ("llm", "small")]


# ---------------------------------------------------------------------------------------------
# end to end


def test_a_suite_on_the_emulator_writes_json_markdown_and_png(tmp_path):
    shapes = [(24, 20, 9, "tiny"), (1, 32, 16, "skinny"), (16, 16, 16, "tiny")]
    db, out = tmp_path / "s.sqlite", tmp_path / "out"
    result = invoke("--shapes", shapes_file(tmp_path, *shapes), "--backend", "sim", "--family", "naive,tiled",
                    "--trials", 2, "--timeout", 30, "--db", db, "-o", out)
    assert result.exit_code == 0, result.output
    assert "no ratio to cuBLAS" in result.output  # the emulator has no cuBLAS
    data = json.loads((out / "shape-suite-sim-cpu-emulator.json").read_text())
    assert data["device"] == "CPU emulator" and data["backend"] == "sim"
    assert data["budget"] == {"trials": 2, "timeout_s": 30.0, "total_timeout_s": None, "sampler": "tpe-mv",
                              "families": ["naive", "tiled"], "precision": "fp32", "seed": 0, "remeasure": None, "devices": None}
    assert data["tuning_s"] > 0 and data["geomean_cublas_over_ours"] is None and data["worst"] is None
    assert [(s["M"], s["N"], s["K"], s["group"]) for s in data["shapes"]] == shapes
    for s in data["shapes"]:
        rows = ok_rows(db, (s["M"], s["N"], s["K"]))
        best = min(rows, key=lambda r: r["time_ms"])
        assert (s["ours_ms"], s["kernel"], s["result_id"]) == (best["time_ms"], best["kernel"], best["id"])
        assert s["cublas_ms"] is None and s["error"] is None and s["tuning_s"] > 0
        r = roofline(s["M"], s["N"], s["K"], H200)
        assert s["roofline_ms"] == pytest.approx(r.ms) and s["memory_bound"] == r.memory_bound
        assert s["pct_roofline"] == pytest.approx(100 * r.ms / s["ours_ms"])
    page = (out / "shape-suite-sim-cpu-emulator.md").read_text()
    assert "| shape | group | cuBLAS ms | ours ms | cuBLAS/ours | % of roofline | memory-bound? | kernel |" in page
    assert sum(line.startswith(("| 24x20x9 | tiny |", "| 1x32x16 | skinny |", "| 16x16x16 | tiny |"))
               for line in page.splitlines()) == 3
    assert "![cuBLAS/ours and % of roofline per shape](shape-suite-sim-cpu-emulator.png)" in page
    png = (out / "shape-suite-sim-cpu-emulator.png").read_bytes()
    assert png.startswith(PNG_MAGIC) and len(png) > 10_000

    # --no-tune rewrites the same numbers from the database, tuning nothing
    again = invoke("--shapes", shapes_file(tmp_path, *shapes), "--backend", "sim", "--no-tune", "--db", db,
                   "-o", tmp_path / "again")
    assert again.exit_code == 0, again.output
    redo = json.loads((tmp_path / "again" / "shape-suite-sim-cpu-emulator.json").read_text())
    assert redo["tuning_s"] is None and redo["budget"]["tuned"] is False and "trials" not in redo["budget"]
    assert "Nothing tuned in this run (`--no-tune`)" in (tmp_path / "again" / "shape-suite-sim-cpu-emulator.md").read_text()
    assert [s["ours_ms"] for s in redo["shapes"]] == [s["ours_ms"] for s in data["shapes"]]


def test_a_suite_with_remeasure_stale_measures_todays_source_of_a_recorded_best(tmp_path):
    """After a template changed (planted: a best row's source hash), --remeasure stale has the shape's
    search measure today's source of that config; the budget says the suite was asked to."""
    shapes, db = [(24, 20, 9, "tiny")], tmp_path / "s.sqlite"
    first = invoke("--shapes", shapes_file(tmp_path, *shapes), "--backend", "sim", "--family", "naive,tiled",
                   "--trials", 2, "--timeout", 30, "--db", db, "-o", tmp_path / "one")
    assert first.exit_code == 0, first.output
    best = min(ok_rows(db, (24, 20, 9)), key=lambda r: r["time_ms"])
    with sqlite3.connect(db) as conn:
        conn.execute("update results set source_hash = ? where id = ?", ("0" * 64, best["id"]))
    conn.close()
    again = invoke("--shapes", shapes_file(tmp_path, *shapes), "--backend", "sim", "--family", "naive,tiled",
                   "--trials", 1, "--timeout", 30, "--remeasure", "stale", "--db", db, "-o", tmp_path / "two")
    assert again.exit_code == 0, again.output
    assert [r["source_hash"] for r in ok_rows(db, (24, 20, 9)) if r["kernel"] == best["kernel"]][-1] == best["source_hash"]
    data = json.loads((tmp_path / "two" / "shape-suite-sim-cpu-emulator.json").read_text())
    assert data["budget"]["remeasure"] == "stale"


def test_a_replayed_suite_pairs_each_time_with_cublas_from_the_same_row(tmp_path):
    # the dataset is gzip'd: the replay reads it as it is (autotune.packed)
    shapes = [(2048, 2048, 2048, "large"), (1, 8192, 8192, "skinny-m"), (3, 5, 7, "absent")]
    db, out = tmp_path / "r.sqlite", tmp_path / "out"
    result = invoke("--shapes", shapes_file(tmp_path, *shapes), "--backend", "replay", "--replay-db", H200_SUITE_DB,
                    "--trials", 4, "--db", db, "-o", out)
    assert result.exit_code == 1, result.output  # one shape failed; the others were tuned
    data = json.loads((out / "shape-suite-replay-h200.json").read_text())
    assert data["device"] == "NVIDIA H200"
    first, skinny, absent = data["shapes"]
    for s in (first, skinny):
        best = min(ok_rows(db, (s["M"], s["N"], s["K"])), key=lambda r: r["time_ms"])
        assert s["ours_ms"] == best["time_ms"] and s["cublas_ms"] == best["cublas_ms"]  # one row: one process
        assert s["cublas_over_ours"] == pytest.approx(best["cublas_ms"] / best["time_ms"])
    assert skinny["memory_bound"] and not first["memory_bound"]
    assert absent["ours_ms"] is None and "has no recorded results for 3x5x7" in absent["error"]
    ratios = [first["cublas_over_ours"], skinny["cublas_over_ours"]]
    assert data["geomean_cublas_over_ours"] == pytest.approx(math.sqrt(ratios[0] * ratios[1]))
    worst = min((first, skinny), key=lambda s: s["cublas_over_ours"])
    assert first["cublas_over_ours"] != skinny["cublas_over_ours"]  # else "worst" would not tell them apart
    shape, label = f"{worst['M']}x{worst['N']}x{worst['K']}", "large" if worst is first else "skinny-m"
    assert data["worst"]["shape"] == shape
    assert f"geometric mean of cuBLAS/ours over 2 shapes: {data['geomean_cublas_over_ours']:.3f}" in result.output
    assert f"worst shape: {shape} ({label})" in result.output
    page = (out / "shape-suite-replay-h200.md").read_text()
    assert f"| 1x8192x8192 | skinny-m | {skinny['cublas_ms']:.4g} | {skinny['ours_ms']:.4g} | " \
           f"{skinny['cublas_over_ours']:.3f} | {skinny['pct_roofline']:.1f} | yes |" in page


# ---------------------------------------------------------------------------------------------
# the budget


def test_the_total_timeout_shares_what_is_left_among_the_shapes_left(monkeypatch):
    o = SuiteOptions("x", "db", "out", [NAIVE], timeout=60.0, total_timeout=100.0)
    monkeypatch.setattr("autotune.api.suite.time.monotonic", lambda: 1000.0 + 40.0)
    assert shape_timeout(o, 1000.0, 3) == pytest.approx(20.0)  # 60 s left for 3 shapes
    assert shape_timeout(o, 1000.0, 1) == 60.0  # never more than --timeout
    assert shape_timeout(o, 940.0, 2) is None  # spent
    assert shape_timeout(SuiteOptions("x", "db", "out", [NAIVE], timeout=7.0), 0.0, 5) == 7.0


def test_a_spent_total_timeout_or_a_stop_leaves_shapes_untuned_and_says_so(tmp_path):
    path = shapes_file(tmp_path, (8, 8, 8, "a"), (9, 9, 9, "a"))
    o = SuiteOptions(str(path), str(tmp_path / "s.sqlite"), str(tmp_path / "out"), [NAIVE], trials=1,
                     total_timeout=0.5, kind="sim")
    assert run_suite(o) == 0
    data = json.loads((tmp_path / "out" / "shape-suite-sim.json").read_text())
    assert [s["error"] for s in data["shapes"]] == ["not tuned: the suite's --total-timeout was spent"] * 2
    stop = threading.Event()
    stop.set()
    o = SuiteOptions(str(path), str(tmp_path / "s.sqlite"), str(tmp_path / "out2"), [NAIVE], kind="sim")
    assert run_suite(o, stop) == 130
    data = json.loads((tmp_path / "out2" / "shape-suite-sim.json").read_text())
    assert [s["error"] for s in data["shapes"]] == ["not tuned: the suite was stopped"] * 2


def test_geomean_and_worst_are_over_shapes_with_both_times():
    def row(M: int, ours: float | None, cublas: float | None) -> SuiteRow:
        best = None if ours is None else {"time_ms": ours, "cublas_ms": cublas, "kernel": "k", "id": M}
        return SuiteRow(SuiteShape(M, 64, 64, "g"), roofline(M, 64, 64, H200), best)

    suite = Suite("GPU", "cuda", "h200", H200, {}, None, None,
                  [row(1, 2.0, 1.0), row(2, 1.0, 2.0), row(3, 1.0, 0.25), row(4, 1.0, None), row(5, None, None)])
    assert suite.geomean == pytest.approx((0.5 * 2.0 * 0.25) ** (1 / 3))
    assert suite.worst is not None and suite.worst.shape.M == 3


def test_output_names_say_the_device_and_never_pass_a_replay_off_as_a_gpu_run():
    assert stem("NVIDIA H200", "cuda") == "shape-suite-h200"
    assert stem("NVIDIA H100 80GB HBM3", "cuda") == "shape-suite-h100"
    assert stem("NVIDIA H200", "replay") == "shape-suite-replay-h200"
    assert stem("CPU emulator", "sim") == "shape-suite-sim-cpu-emulator"
    assert stem(None, "sim") == "shape-suite-sim"


# ---------------------------------------------------------------------------------------------
# bad input: one line, exit status 2, nothing created


@pytest.mark.parametrize("text, message", [
    ("shapes = [", "is not valid TOML"),
    ("other = 1\n", "has no `shapes = [ ... ]` array"),
    ('shapes = [ { group = "a", M = 4, N = 4 } ]\n', "shape 1: missing K"),
    ('shapes = [ { group = "a", M = 4, N = 4, K = 4, L = 1 } ]\n', "shape 1: unknown L"),
    ('shapes = [ { group = "", M = 4, N = 4, K = 4 } ]\n', "group must be a non-empty string"),
    ('shapes = [ { group = "a", M = 0, N = 4, K = 4 } ]\n', "M=0 must be at least 1"),
    ('shapes = [ { group = "a", M = 4, N = 4, K = 4 }, { group = "b", M = 4, N = 4, K = 4 } ]\n', "lists 4x4x4 twice"),
    ('shapes = [ 4 ]\n', "shape 1 is not a table"),
])
def test_a_bad_shapes_file_is_one_line(tmp_path, text, message):
    result = invoke("--shapes", shapes_file(tmp_path, text=text), "--backend", "sim", "--db", tmp_path / "s.sqlite",
                    "-o", tmp_path / "out")
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], result.output
    assert not (tmp_path / "s.sqlite").exists() and not (tmp_path / "out").exists()


def test_unknown_group_missing_file_and_emulator_limit_are_one_line(tmp_path):
    path = shapes_file(tmp_path, (8, 8, 8, "small"), (1024, 1024, 1024, "large"))
    for args, message in [(["--group", "huge"], "no group huge in"),
                          (["--shapes", tmp_path / "none.toml"], "cannot read shapes file"),
                          ([], "too large for the emulator"),
                          (["--backend", "replay"], "--backend replay needs --replay-db")]:
        backend = [] if "--backend" in args else ["--backend", "sim"]
        result = invoke("--shapes", path, *backend, "--db", tmp_path / "s.sqlite", "-o", tmp_path / "out", *args)
        assert result.exit_code == 2 and result.output.startswith("error: ") and message in result.output, result.output
        assert len(result.output.strip().splitlines()) == 1
    assert not (tmp_path / "s.sqlite").exists()


def test_no_gpu_is_one_line_before_any_shape(tmp_path):
    from autotune.backends.cuda.device import no_device_reason

    if no_device_reason() is None:
        pytest.skip("a CUDA device answers here")
    result = CliRunner().invoke(cli, ["suite", "--shapes", str(shapes_file(tmp_path, (64, 64, 64, "a"))),
                                      "--db", str(tmp_path / "s.sqlite"), "-o", str(tmp_path / "out")])
    assert result.exit_code == 2 and result.output.startswith("error: no CUDA device found"), result.output
    assert len(result.output.strip().splitlines()) == 1
    assert not (tmp_path / "s.sqlite").exists() and not (tmp_path / "out").exists()


def test_the_suite_leaves_naive_out_unless_asked(tmp_path):
    """The seed's naive kernel never wins a shape and a trial of it takes seconds at 8192^3."""
    from click.testing import CliRunner

    from autotune.cli import cli
    from autotune.families import families_for

    path = shapes_file(tmp_path, (8, 8, 8, "a"))
    args = ["suite", "--shapes", str(path), "--backend", "sim", "--total-timeout", "0.001", "--db",
            str(tmp_path / "s.sqlite"), "-o", str(tmp_path / "out")]
    assert CliRunner().invoke(cli, args).exit_code == 0
    budget = json.loads((tmp_path / "out" / "shape-suite-sim.json").read_text())["budget"]
    assert budget["families"] == [name for name in families_for("fp32") if name != "naive"]  # FP32 contract
    assert CliRunner().invoke(cli, [*args, "--family", "naive,tiled"]).exit_code == 0
    assert json.loads((tmp_path / "out" / "shape-suite-sim.json").read_text())["budget"]["families"] == ["naive", "tiled"]


def test_a_suite_reports_only_rows_its_contract_admits(tmp_path):
    """One database, an FP32 row and a faster tensor-core row at a shape: the fp32 suite's best is the
    FP32 row; the fp32-tc suite's (--precision fp32-tc, whose default families add the tensor-core
    ones) the tensor-core row. A tensor-core family without --precision is one line, exit 2."""
    from autotune import store
    from autotune.families import TENSOR_CORE

    db_path, path = tmp_path / "s.sqlite", shapes_file(tmp_path, (64, 64, 64, "a"))
    db = store.open_db(str(db_path))
    row = {"backend": "cuda", "M": 64, "N": 64, "K": 64, "status": "ok", "cublas_ms": 0.01, "gpu_name": "NVIDIA H200"}
    db["results"].insert_all([{**row, "family": "blocked", "kernel": "fp32 row", "time_ms": 0.02},
                              {**row, "family": "tf32x3wg", "kernel": "tensor-core row", "time_ms": 0.005}], alter=True)
    db.close()
    outputs = {}
    for precision in ("fp32", "fp32-tc"):
        out = tmp_path / precision
        result = invoke("--shapes", path, "--no-tune", "--precision", precision, "--db", db_path, "-o", out)
        assert result.exit_code == 0, result.output
        outputs[precision] = json.loads((out / "shape-suite-h200.json").read_text())
    assert [s["kernel"] for s in outputs["fp32"]["shapes"]] == ["fp32 row"]
    assert [s["kernel"] for s in outputs["fp32-tc"]["shapes"]] == ["tensor-core row"]
    assert outputs["fp32"]["budget"]["precision"] == "fp32"
    assert set(TENSOR_CORE) <= set(outputs["fp32-tc"]["budget"]["families"])
    assert not set(TENSOR_CORE) & set(outputs["fp32"]["budget"]["families"])
    bad = invoke("--shapes", path, "--no-tune", "--family", "blocked,tf32x3wg", "--db", db_path, "-o", tmp_path)
    assert bad.exit_code == 2 and "add --precision fp32-tc" in bad.output and len(bad.output.strip().splitlines()) == 1


def test_the_suite_takes_devices_and_records_them_in_its_budget(tmp_path):
    from click.testing import CliRunner

    from autotune.cli import cli

    path = shapes_file(tmp_path, (8, 8, 8, "a"))
    args = ["suite", "--shapes", str(path), "--total-timeout", "0.001", "--db", str(tmp_path / "s.sqlite"),
            "-o", str(tmp_path / "out")]
    bad = CliRunner().invoke(cli, [*args, "--devices", "0,0"])
    assert bad.exit_code == 2 and "names a device twice" in bad.output and len(bad.output.strip().splitlines()) == 1
    assert CliRunner().invoke(cli, [*args, "--backend", "sim"]).exit_code == 0
    assert json.loads((tmp_path / "out" / "shape-suite-sim.json").read_text())["budget"]["devices"] is None  # no GPU


def test_a_gpu_suite_records_the_gpus_it_used(monkeypatch, tmp_path):
    """Without --devices every visible GPU: the budget names them (suite times on 1 and 2 GPUs differ)."""
    from autotune.api import suite as suite_api

    monkeypatch.setattr(suite_api, "visible_devices", lambda: (0, 1))
    seen = []
    monkeypatch.setattr(suite_api, "tune_shape", lambda o, s, timeout, stop, kept: seen.append(o.devices))

    def write(o, *rest):
        seen.append(o.budget()["devices"])
        raise KeyboardInterrupt  # what was written is all this test needs

    monkeypatch.setattr(suite_api, "write", write)
    path = shapes_file(tmp_path, (8, 8, 8, "a"))
    options = suite_api.SuiteOptions(str(path), str(tmp_path / "s.sqlite"), str(tmp_path / "out"), [])
    with pytest.raises(KeyboardInterrupt):
        suite_api.run_suite(options)
    assert seen == [(0, 1), [0, 1]]


@pytest.mark.parametrize("gpu, preset, gbps", [("NVIDIA H200", "h200", 4800), ("NVIDIA H100 80GB HBM3", "h100-sxm", 3350)])
def test_a_suites_roofline_is_drawn_for_the_gpu_its_rows_were_measured_on(tmp_path, gpu, preset, gbps):
    """An H100's suite states the H100 SXM's DRAM floor (3350 GB/s), not the H200's: at 1x8192x8192 the floor is
    4(MK + KN + MN) bytes over the bandwidth."""
    from autotune import store

    db_path, path = tmp_path / "s.sqlite", shapes_file(tmp_path, (1, 8192, 8192, "gemv"))
    db = store.open_db(str(db_path))
    db["results"].insert({"backend": "cuda", "M": 1, "N": 8192, "K": 8192, "status": "ok", "cublas_ms": 0.02,
                          "gpu_name": gpu, "family": "skinny", "kernel": "a row", "time_ms": 0.02}, alter=True)
    db.close()
    result = invoke("--shapes", path, "--no-tune", "--db", db_path, "-o", tmp_path / "out")
    assert result.exit_code == 0, result.output
    out = json.loads(next((tmp_path / "out").glob("shape-suite-*.json")).read_text())
    assert out["roofline_spec"]["preset"] == preset
    M, N, K = 1, 8192, 8192
    assert out["shapes"][0]["dram_floor_ms"] == pytest.approx(4 * (M * K + K * N + M * N) / (gbps * 1e9) * 1e3)


def test_a_gpu_no_preset_names_gets_the_default_preset():
    from autotune.explain.model import DEFAULT_PRESET, preset_for

    assert preset_for("NVIDIA H100 80GB HBM3") == "h100-sxm" and preset_for("NVIDIA H200") == "h200"
    assert preset_for("NVIDIA H100 PCIe") == preset_for("NVIDIA GeForce RTX 4090") == preset_for(None) == DEFAULT_PRESET
