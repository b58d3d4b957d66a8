"""The report from the committed H200 database: no GPU, the numbers that are in the
database, the flat shared ceiling, three real PNGs, and the database left untouched."""
from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from autotune import store
from autotune.cli import cli
from autotune.explain import counts as ex
from autotune.explain.ladder import flat_ceiling, verdict
from autotune.explain.model import PRESETS
from autotune.explain.page import PLOTS, plot_name, write_page
from autotune.explain.plots import write_plots
from autotune.explain.report import build
from autotune.explain.roofline import roofline
from autotune.packed import unpacked

H200_DB = Path(__file__).resolve().parent.parent / "benchmarks" / "data" / "h200-4096-naive-tiled-search.sqlite.gz"
# The same with its ten fastest kernels' SASS counts saved, as a search saves them today
# (tests/data/make_counted_db.py): the report analyses only the ladder's kernels
COUNTED_DB = Path(__file__).resolve().parent / "data" / "h200-4096-naive-tiled-counted.sqlite"
SHAPE = (4096, 4096, 4096)
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
needs_nvdisasm = pytest.mark.skipif(not ex.have_nvdisasm(), reason="nvdisasm not installed (the sass extra)")


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """One report for the module (it compiles the ladder's ten kernels); the cubin cache stays in tmp."""
    base = tmp_path_factory.mktemp("report")
    db_path = base / "h200.sqlite"
    shutil.copyfile(COUNTED_DB, db_path)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AUTOTUNE_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))
        data = build(str(db_path), SHAPE)
        folder = base / "out"
        folder.mkdir()
        write_plots(data, folder)
        page = write_page([data], folder)
    return data, db_path, folder, page.read_text()


def db_row(db_path: Path, kernel: str) -> dict:
    conn = sqlite3.connect(db_path)
    conn.row_factory = sqlite3.Row
    rows = conn.execute("SELECT * FROM results WHERE kernel = ? AND status = 'ok' AND M = 4096 ORDER BY id",
                        [kernel]).fetchall()
    conn.close()
    assert rows, kernel
    return dict(rows[-1])


@needs_nvdisasm
def test_folder_has_the_page_and_three_real_pngs(made):
    _, _, folder, page = made
    for name in (plot_name(made[0], key) for key in PLOTS):
        data = (folder / name).read_bytes()
        assert data.startswith(PNG_MAGIC) and len(data) > 20_000, name
        assert f"]({name})" in page
    assert "preset `h200` = NVIDIA H200" in page and "without a GPU" in page


@needs_nvdisasm
@pytest.mark.parametrize("label, kernel", [
    ("naive, x over rows", "sgemm_naive_xrows_bx32_by8"),
    ("naive, x over cols", "sgemm_naive_xcols_bx32_by8"),
    ("tiled T=16", "sgemm_tiled_T16_bx16_by16_xcols_pad0"),
    ("tiled T=32", "sgemm_tiled_T32_bx32_by32_xcols_pad0"),
])
def test_ladder_shows_the_numbers_in_the_database(made, label, kernel):
    data, db_path, _, page = made
    expected = db_row(db_path, kernel)
    line = next(x for x in data.ladder if x.label == label)
    assert line.config.name == kernel and line.row["id"] == expected["id"]
    for key in ("time_ms", "tflops", "pct_cublas", "pct_peak"):
        assert line.row[key] == expected[key]
    row = next(r for r in page.splitlines() if r.startswith(f"| {label} |"))
    for text in (f"{expected['time_ms']:.3f}", f"{expected['tflops']:.2f}", f"{expected['pct_cublas']:.1f}%",
                 f"{expected['pct_peak']:.1f}%", f"| {expected['id']} |"):
        assert text in row, (text, row)


@needs_nvdisasm
def test_unmeasured_configs_say_how_to_measure_them(made):
    data, _, _, page = made
    assert "not measured: `autotune measure --M 4096 --N 4096 --K 4096 --family tiled -p T=4 -p pad=0`" in page
    assert not data.line(4, 0).measured and data.line(4, 0).model["binding"] == "global"


@needs_nvdisasm
def test_shared_ceiling_is_flat_and_the_band_holds(made):
    data, _, _, page = made
    for pad in (0, 1):
        ceilings = flat_ceiling(data, pad)
        assert len({round(c, 9) for c in ceilings.values()}) == 1, ceilings
    for T in (16, 32):
        line = data.line(T, 0)
        assert line.model["binding"] == "shared"
        assert 0.5 <= line.row["tflops"] / line.model["ceil_shared"] <= 1.0
    assert any("The data **confirm**" in v for v in verdict(data))
    assert "13.38" in page  # peak/5 with the merged LDS.128 the compiler emits for pad 0


@needs_nvdisasm
def test_best_is_store_best_and_cublas_comes_from_baselines(made):
    data, db_path, _, page = made
    best = store.best(store.open_db(db_path), SHAPE)
    assert data.best.row["id"] == best["id"] and data.top[0].row["id"] == best["id"]
    assert f"| best found (search) | `{best['kernel']}` | {best['time_ms']:.3f} |" in page
    assert data.cublas["count"] == 8 and 2.6 < data.cublas["time_ms"] < 2.8


@needs_nvdisasm
def test_page_gives_the_shapes_roofline_and_each_top_rows_share_of_it(made):
    data, _, _, page = made
    r = roofline(*SHAPE, PRESETS["h200"])
    assert f"Roofline at this shape: {r.ms:.4g} ms, **compute-bound**" in page
    assert f"DRAM floor {r.dram_ms:.4g} ms" in page
    best = data.best.row
    assert f"The best verified kernel runs at {100 * r.ms / best['time_ms']:.1f}% of it, cuBLAS at " \
           f"{100 * r.ms / data.cublas['time_ms']:.1f}%." in page
    assert "| % of roofline |" in page
    first = next(line for line in page.splitlines() if line.startswith(f"| #1 | {best['id']} |"))
    assert f"| {100 * r.ms / best['time_ms']:.1f}% |" in first


@needs_nvdisasm
def test_progress_is_best_so_far_over_the_trials_table(made):
    data, _, _, _ = made
    (trials,) = data.progress.values()
    assert len(trials) == 367 and [n for n, _ in trials] == list(range(367))
    assert max(v for _, v in trials) == pytest.approx(data.best.row["tflops"])


def test_report_leaves_the_database_untouched(tmp_path, monkeypatch):
    db_path = tmp_path / "h200.sqlite"
    shutil.copyfile(unpacked(H200_DB), db_path)
    monkeypatch.setattr(ex, "have_nvdisasm", lambda: False)  # fast: no compiling, and it must still work
    result = CliRunner().invoke(cli, ["report", "--M", "4096", "--db", str(db_path), "-o", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    assert db_path.read_bytes() == unpacked(H200_DB).read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["h200.sqlite", "r"]  # no -wal/-shm left beside it
    assert "no SASS model" in (tmp_path / "r" / "report.md").read_text()


def test_report_for_a_shape_with_no_results_is_one_line(tmp_path):
    db_path = tmp_path / "h200.sqlite"
    shutil.copyfile(unpacked(H200_DB), db_path)
    result = CliRunner().invoke(cli, ["report", "--M", "64", "--db", str(db_path), "-o", str(tmp_path / "r")])
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        f"error: no results for M=64 in {db_path}; its shapes: 4096x4096x4096"]
    assert not (tmp_path / "r").exists()


def test_the_reports_preset_is_the_gpu_the_rows_were_measured_on(tmp_path, monkeypatch):
    """The same rows said to come from an H100 (SXM, HBM3): the report's ceilings are the H100 SXM preset's (the
    module's report, of the H200's rows, states the H200's)."""
    db_path = tmp_path / "h100.sqlite"
    shutil.copyfile(COUNTED_DB, db_path)
    with sqlite3.connect(db_path) as conn:
        conn.execute("UPDATE results SET gpu_name = 'NVIDIA H100 80GB HBM3'")
    conn.close()
    monkeypatch.setenv("AUTOTUNE_CACHE", str(tmp_path / "cache"))
    data = build(str(db_path), SHAPE)
    assert (data.preset, data.spec.dram_gbps, data.gpus) == ("h100-sxm", 3350, ["NVIDIA H100 80GB HBM3"])
