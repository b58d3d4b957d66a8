"""Where rows carry the board's power, `autotune report` shows each family's best and cuBLAS with
their W and GFLOP/s/W, and `autotune best` a line of them; where none was read, neither says a word."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

from autotune import store
from autotune.api.commands import energy_text
from autotune.backends.outcome import OK, tflops
from autotune.cli import cli
from autotune.families import BLOCKED, NAIVE
from autotune.space import make_config
from tests.test_search_report import SHAPE, add, make_db, page_of, table

SECTION = "### Speed and energy: each family's best and cuBLAS"
FAST = make_config(BLOCKED, {"BM": 64, "BK": 8})  # 1.5 ms: the blocked family's best, and the best


@pytest.fixture(autouse=True)
def no_nvdisasm(monkeypatch):
    monkeypatch.setattr("autotune.explain.counts.have_nvdisasm", lambda: False)


def powered_db(path):
    """make_db's rows, then a faster blocked row with its power and a cuBLAS baseline with its own."""
    make_db(path)
    db = store.open_db(path)
    rate = tflops(*SHAPE, 1.5)
    add(db, FAST, OK, 1.5, 7, watts=400.0, gflops_per_watt=rate * 1000 / 400, cublas_ms=1.0, cublas_watts=420.0,
        cublas_gflops_per_watt=tflops(*SHAPE, 1.0) * 1000 / 420, precision="fp32", err=1e-7,
        time_ms_min=1.5, time_ms_max=1.5)
    for watts in (410.0, 430.0):
        store.insert_baseline(db, {"backend": "cuda", "gpu_name": "Fake GPU", "M": 256, "N": 256, "K": 256,
                                   "time_ms": 1.0, "library": "cuBLAS test", "watts": watts})
    db.conn.close()
    return path


def test_the_report_shows_power_beside_speed_where_it_was_read(tmp_path):
    page = page_of(powered_db(tmp_path / "r.sqlite"), tmp_path, "--M", "256")
    rows = {r["family's best"]: r for r in table(page, "family's best")}
    blocked, naive, cublas = rows[BLOCKED.name], rows[NAIVE.name], rows["cuBLAS"]
    assert (blocked["W"], blocked["GFLOP/s/W"], blocked["cuBLAS W beside it"]) == (
        "400", f"{tflops(*SHAPE, 1.5) * 1000 / 400:.3g}", "420")
    assert naive["W"] == naive["GFLOP/s/W"] == "—"  # measured before the power was read
    # cuBLAS: the median of its baselines' watts, the ones without (make_db's) left out
    assert (cublas["W"], cublas["GFLOP/s/W"]) == ("420", f"{tflops(*SHAPE, 1.0) * 1000 / 420:.3g}")


def test_no_power_read_no_energy_section(tmp_path):
    assert SECTION not in page_of(make_db(tmp_path / "r.sqlite"), tmp_path, "--M", "256")


def test_best_prints_the_power_where_read(tmp_path):
    db_path = powered_db(tmp_path / "r.sqlite")
    out = CliRunner().invoke(cli, ["best", "--M", "256", "--db", str(db_path)])
    assert out.exit_code == 0, out.output
    assert (f"  400 W, {tflops(*SHAPE, 1.5) * 1000 / 400:.3g} GFLOP/s/W; cuBLAS 420 W, "
            f"{tflops(*SHAPE, 1.0) * 1000 / 420:.3g} GFLOP/s/W") in out.output.splitlines()
    row = store.best(store.open_readonly(db_path), SHAPE)
    assert row is not None and energy_text(row).startswith("\n  400 W")
    assert energy_text({**row, "watts": None, "gflops_per_watt": None}) == ""  # not read: no line


def test_the_suite_table_gains_power_columns_where_a_best_row_has_them():
    from autotune.explain.model import PRESETS
    from autotune.explain.roofline import roofline
    from autotune.explain.suite import Suite, SuiteRow, SuiteShape, table

    spec = PRESETS["h200"]

    def suite(**energy) -> Suite:
        best = {"kernel": "k", "id": 1, "time_ms": 2.0, "cublas_ms": 2.5, **energy}
        rows = [SuiteRow(SuiteShape(*SHAPE, "square"), roofline(*SHAPE, spec), best),
                SuiteRow(SuiteShape(512, 512, 512, "square"), roofline(512, 512, 512, spec), None, error="no time")]
        return Suite("Fake GPU", "cuda", "h200", spec, {}, None, None, rows)

    powered = suite(watts=400.0, gflops_per_watt=41.9, cublas_watts=420.0, cublas_gflops_per_watt=31.96)
    header, _, first, second = table(powered)
    assert "| cuBLAS W | ours W | cuBLAS GFLOP/s/W | ours GFLOP/s/W |" in header
    assert "| no | 420 | 400 | 32 | 41.9 | `k` |" in first and "| — | — | — | — | no time |" in second
    assert powered.rows[0].as_json()["ours_watts"] == 400.0 and powered.rows[1].as_json()["cublas_watts"] is None
    plain = table(suite())
    assert " W |" not in plain[0] and plain[2].endswith("| no | `k` |")
