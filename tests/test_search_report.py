"""`autotune report` on a tiny database built here: a section per shape searched, its progress, the
families tried by status, each family's best, the ceilings against measured (or why there are none),
the flat-in-T study only where tiled rows exist, and bad input as one line."""
from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

import autotune
from autotune import store
from autotune.backends.outcome import COMPILE_ERROR, INVALID, OK, WRONG, tflops
from autotune.cli import cli
from autotune.errors import AutotuneError
from autotune.explain.page import plot_name
from autotune.explain.report import build_all
from autotune.families import BLOCKED, NAIVE, TILED
from autotune.space import Config, make_config

SHAPE = (256, 256, 256)
OTHER = (512, 256, 128)
CUBLAS_MS = 1.0
FLAT = "Does the shared-memory ceiling stay flat in T?"
# The SASS counts of the tiled T=16 kernel (pad 0), as a search stores them with its row
T16_COUNTS = {"ffma": 16, "lds32": 16, "lds64": 0, "lds128": 4, "ldg32": 2, "ldg64": 0, "ldg128": 0, "sts": 2,
              "bar": 2, "ldl": 0, "stl": 0, "lds_per_ffma": 1.25, "sass_regs": 32, "spills": 0, "frame_bytes": 0,
              "static_shared": 2048, "sass_scope": "loop", "hmma": 0, "hgmma": 0, "hgmma_n": 0}


@pytest.fixture(autouse=True)
def no_nvdisasm(monkeypatch):
    """The report as on a machine without the sass extra: counts only where the rows carry them."""
    monkeypatch.setattr("autotune.explain.counts.have_nvdisasm", lambda: False)


def add(db, config: Config, status: str, ms: float | None, number: int, shape=SHAPE, study: str = "s1",
        **extra) -> int:
    """One trial of a search: its results row and its trials row."""
    timed = {"time_ms": ms, "tflops": tflops(*shape, ms), "pct_cublas": 100 * CUBLAS_MS / ms} if ms else {}
    row_id = store.insert_result(db, {**config.values, "kernel": config.name, "family": config.family.name,
                                      "backend": "cuda", "M": shape[0], "N": shape[1], "K": shape[2],
                                      "status": status, "gpu_name": "Fake GPU", **timed, **extra})
    store.insert_trial(db, study, number, row_id, cached=False)
    return row_id


def blocked(bk: int) -> Config:
    return make_config(BLOCKED, {"BK": bk})


def make_db(path: Path, tiled: bool = False) -> Path:
    """Two families at SHAPE (blocked: 2 ok, 1 wrong, 1 compile error; naive: 1 ok, 1 invalid), one
    blocked row at OTHER, and with tiled=True a tiled T=16 row that carries its SASS counts."""
    db = store.open_db(path)
    store.insert_baseline(db, {"backend": "cuda", "gpu_name": "Fake GPU", "M": 256, "N": 256, "K": 256,
                               "time_ms": CUBLAS_MS, "library": "cuBLAS test"})
    add(db, make_config(NAIVE, {}), OK, 5.0, 0)
    add(db, blocked(8), WRONG, 1.0, 1, reason="relative error 0.5")  # fast but wrong: never a best
    add(db, blocked(16), OK, 4.0, 2)
    add(db, make_config(NAIVE, {"bx": 64}), INVALID, None, 3)
    add(db, blocked(32), COMPILE_ERROR, None, 4)
    add(db, make_config(BLOCKED, {"BM": 64}), OK, 2.0, 5)
    add(db, blocked(16), OK, 3.0, 0, shape=OTHER, study="s2")
    if tiled:
        add(db, make_config(TILED, {"T": 16}), OK, 6.0, 6, **T16_COUNTS)
    db.conn.close()
    return path


def page_of(db_path: Path, tmp_path: Path, *args: str) -> str:
    result = CliRunner().invoke(cli, ["report", "--db", str(db_path), "-o", str(tmp_path / "out"), *args])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == f"wrote {tmp_path / 'out' / 'report.md'}"
    return (tmp_path / "out" / "report.md").read_text()


def table(page: str, first_header: str) -> list[dict[str, str]]:
    """The rows of the markdown table whose header starts with `| first_header |`, by column name."""
    lines = page.splitlines()
    start = next(i for i, x in enumerate(lines) if x.startswith(f"| {first_header} |"))
    names = [c.strip() for c in lines[start].strip("|").split("|")]
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append(dict(zip(names, (c.strip() for c in line.strip("|").split("|")))))
    return rows


def test_a_database_without_tiled_rows_has_no_flat_in_T_section(tmp_path):
    page = page_of(make_db(tmp_path / "r.sqlite"), tmp_path)
    assert "## SGEMM 256x256x256, backend cuda" in page and FLAT not in page
    assert "ceilings_vs_T" not in page and not list((tmp_path / "out").glob("*ceilings_vs_T.png"))


def test_tiled_rows_bring_the_flat_in_T_section_with_its_plot(tmp_path):
    page = page_of(make_db(tmp_path / "r.sqlite", tiled=True), tmp_path)
    assert page.count(FLAT) == 1  # at 256x256x256 only: the other shape has no tiled row
    assert (tmp_path / "out" / "256x256x256-ceilings_vs_T.png").read_bytes().startswith(b"\x89PNG")
    assert "not measured: `autotune measure --M 256 --N 256 --K 256 --family tiled -p T=32 -p pad=0`" in page


def test_each_family_tried_is_listed_with_its_statuses_and_best_against_cublas(tmp_path):
    page = page_of(make_db(tmp_path / "r.sqlite"), tmp_path, "--M", "256")
    rows = {r["family"]: r for r in table(page, "family")}
    assert list(rows) == [NAIVE.name, BLOCKED.name]
    b, n = rows[BLOCKED.name], rows[NAIVE.name]
    assert (b["configs"], b["ok"], b["wrong"], b["compile error"], b["invalid"]) == ("4", "2", "1", "1", "0")
    assert (n["configs"], n["ok"], n["wrong"], n["compile error"], n["invalid"]) == ("2", "1", "0", "0", "1")
    assert b["fastest verified"] == f"`{make_config(BLOCKED, {'BM': 64}).name}`" and b["% of cuBLAS"] == "50.0%"
    assert n["ms"] == "5" and n["% of cuBLAS"] == "20.0%"


def test_progress_says_when_the_best_was_found(tmp_path):
    db_path = make_db(tmp_path / "r.sqlite")
    [data] = build_all(str(db_path), SHAPE)
    assert [(s.number, s.time_ms) for s in data.improvements] == [(0, 5.0), (2, 4.0), (5, 2.0)]
    page = page_of(db_path, tmp_path, "--M", "256")
    steps = table(page, "study")
    assert [(r["trial"], r["ms"], r["% of cuBLAS"]) for r in steps] == [("0", "5", "20.0%"), ("2", "4", "25.0%"),
                                                                      ("5", "2", "50.0%")]
    assert f"- `s1`: 6 trials; best {tflops(*SHAPE, 2.0):.2f} TFLOP/s, first reached at trial 5." in page
    assert (tmp_path / "out" / plot_name(data, "progress")).read_bytes().startswith(b"\x89PNG")


def test_the_ladder_is_each_familys_best_slowest_first(tmp_path):
    [data] = build_all(str(make_db(tmp_path / "r.sqlite", tiled=True)), SHAPE)
    assert [(x.label, x.row["time_ms"]) for x in data.steps] == [(TILED.name, 6.0), (NAIVE.name, 5.0),
                                                                 (BLOCKED.name, 2.0)]


def test_ceilings_where_the_row_has_counts_and_why_not_elsewhere(tmp_path):
    page = page_of(make_db(tmp_path / "r.sqlite", tiled=True), tmp_path, "--M", "256")
    top = {r["config"]: r for r in table(page, "rank")}
    t16 = top[f"`{make_config(TILED, {'T': 16}).name}`"]
    assert t16["binding ceiling"] == "shared 13.38" and t16["measured / ceiling"] == f"{tflops(*SHAPE, 6.0) / 13.38:.0%}"
    assert top[f"`{blocked(16).name}`"]["binding ceiling"] == "no model"
    assert "3 of the 4 rows have no ceilings: no SASS counts: none are stored with the row and nvdisasm" in page


def test_every_shape_searched_gets_a_section_and_filters_narrow_them(tmp_path):
    db_path = make_db(tmp_path / "r.sqlite")
    assert [d.shape for d in build_all(str(db_path), (None, None, None))] == [SHAPE, OTHER]
    assert [d.shape for d in build_all(str(db_path), (None, 256, 128))] == [OTHER]
    page = autotune.report(str(db_path), K=128, output=str(tmp_path / "api")).read_text()
    assert "## SGEMM 512x256x128, backend cuda" in page and "256x256x256" not in page


def test_the_report_leaves_the_database_untouched(tmp_path):
    db_path = make_db(tmp_path / "r.sqlite", tiled=True)
    sqlite3.connect(db_path).execute("PRAGMA journal_mode = DELETE").connection.close()  # as a dataset is committed
    before = db_path.read_bytes()
    page_of(db_path, tmp_path)
    assert db_path.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["out", "r.sqlite"]


def empty_file(path: Path) -> Path:
    path.write_bytes(b"")
    return path


def no_rows(path: Path) -> Path:
    store.open_db(path).conn.close()
    return path


def other_tool(path: Path) -> Path:
    sqlite3.connect(path).execute("create table t (x)").connection.close()
    return path


@pytest.mark.parametrize("make, words", [
    (lambda p: p, "does not exist"),
    (empty_file, "no results table"),
    (other_tool, "no results table"),
    (no_rows, "no results in"),
    (lambda p: make_db(p), "no results for M=64"),
])
def test_bad_input_is_one_line_and_exit_2_from_the_cli_and_the_api_alike(tmp_path, make, words):
    db_path = make(tmp_path / "r.sqlite")
    result = CliRunner().invoke(cli, ["report", "--db", str(db_path), "--M", "64", "-o", str(tmp_path / "out")])
    assert result.exit_code == 2
    [line] = result.output.strip().splitlines()
    assert line.startswith("error: ") and words in line and str(db_path) in line, line
    with pytest.raises(AutotuneError, match=words):
        autotune.report(str(db_path), M=64, output=str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()


def test_an_unknown_preset_from_the_api_is_one_error_before_anything_is_read(tmp_path):
    with pytest.raises(AutotuneError, match="unknown device preset 'h100x'; choose from"):
        autotune.report(str(tmp_path / "none.sqlite"), preset="h100x", output=str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()
