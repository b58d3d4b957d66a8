"""The accuracy contracts (backends/reference.py) on the CPU emulator: a tensor-core kernel is held
to 2x FP32's own error against float64 (numpy's float32 product standing in for cuBLAS), both
errors and the contract are stored with its row, `best` and the report say them; old rows still read."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from autotune import store
from autotune.api.commands import format_row
from autotune.backends.reference import FP32, FP32_TC, TC_FACTOR, TOLERANCE, UNIT_ROUNDOFF, contract_text, judge
from autotune.backends.sim.backend import SimBackend
from autotune.codegen.render import render
from autotune.families import TF32X3, precision_of
from autotune.packed import unpacked
from autotune.search.measure import evaluate
from autotune.space import Limits, make_config
from tests.emulated import plain_tf32

# K = 256: FP32's error (about sqrt(K) * u) is well above the unit-roundoff floor, TF32's (about
# 2**-11, whatever K) a thousand times above it; small M and N keep the emulator at ~1 s a kernel.
SHAPE = (48, 40, 256)
SMALL = {"BM": 64, "BN": 64, "BK": 16, "WM": 32, "WN": 32, "STAGES": 2}
OLD_DB = Path(__file__).resolve().parents[1] / "benchmarks" / "data" / "h200-4096-blocked-search2.sqlite.gz"


@pytest.fixture(scope="module")
def backend() -> SimBackend:
    return SimBackend(*SHAPE, seed=3)


def tf32(terms: int):
    return make_config(TF32X3, {**SMALL, "TERMS": terms})


def test_the_contracts_rule():
    err_ref = 1e-6
    assert judge(FP32_TC, TC_FACTOR * err_ref, err_ref) is None
    assert "contract fp32-tc" in judge(FP32_TC, TC_FACTOR * err_ref * 1.01, err_ref)
    assert judge(FP32_TC, TC_FACTOR * UNIT_ROUNDOFF, 0.0) is None  # an exact FP32 reference is no bar
    assert judge(FP32_TC, float("inf"), err_ref) and judge(FP32_TC, float("nan"), err_ref)
    assert judge(FP32, TOLERANCE) is None and judge(FP32, TOLERANCE * 1.01)
    assert precision_of("tf32x3") == FP32_TC and precision_of("blocked") == FP32


def test_three_terms_pass_and_their_row_says_under_which_contract(backend, db):
    done = evaluate(db, backend, tf32(3), Limits(), None)
    row = done.row
    assert row["status"] == "ok" and row["precision"] == FP32_TC
    assert 0 < row["err"] <= TC_FACTOR * row["err_ref"]
    stored = store.best(db, SHAPE, backend="sim")
    assert stored["id"] == row["id"] and stored["err_ref"] == row["err_ref"]
    text = format_row(stored)
    assert "contract fp32-tc" in text and f"{row['err']:.3g}" in text and f"{row['err_ref']:.3g}" in text


def test_plain_tf32_is_wrong_with_both_errors_and_never_searched(backend, db):
    # measured outside a search (its template still renders it), it is wrong under the contract...
    outcome = backend.measure(*plain_tf32(tf32(3)))
    row = outcome.row()
    assert row["status"] == "wrong" and f"contract {FP32_TC}" in row["reason"]
    assert row["err"] > 100 * TC_FACTOR * row["err_ref"] > 0  # TF32's 11 bits against FP32's 24
    # ...so a search refuses it before it costs a kernel (PLAIN_TF32)
    refused = evaluate(db, backend, tf32(1), Limits(), None).row
    assert refused["status"] == "invalid" and "TERMS=1 is plain TF32" in refused["reason"]
    assert "contract fp32-tc" in row["reason"]


def test_a_kernel_a_few_bits_short_of_fp32_passes_the_fp32_tolerance_but_not_fp32_tc(backend):
    config = tf32(3)
    source = render(config)
    old = "small = to_tf32(x - big);"
    assert source.count(old) == 1
    # the small parts keep 5 of their 11 bits: about 19 significand bits per operand, not 21
    coarse = source.replace(old, "small = __uint_as_float(__float_as_uint(to_tf32(x - big)) & 0xfffc0000u);")
    outcome = backend.measure(config, coarse)
    assert outcome.err is not None and outcome.err_ref is not None
    assert outcome.err < TOLERANCE  # today's FP32 check would pass it
    assert outcome.status == "wrong" and outcome.err > TC_FACTOR * outcome.err_ref


def test_rows_of_an_old_database_still_read_and_new_rows_add_the_columns(tmp_path, backend):
    old = store.open_readonly(OLD_DB)
    before = store.best(old, (4096, 4096, 4096))
    assert before is not None and "precision" not in before  # written before the contracts
    assert "contract fp32" in format_row(before)
    copy = tmp_path / "old.sqlite"
    shutil.copy(unpacked(OLD_DB), copy)
    db = store.open_db(copy)
    row = evaluate(db, backend, tf32(3), Limits(), None).row
    again = store.result_by_id(db, row["id"])
    assert again["precision"] == FP32_TC and isinstance(again["err_ref"], float)
    assert store.best(db, (4096, 4096, 4096))["precision"] is None
    assert contract_text({"err": 1e-6}) == f"contract fp32: error 1e-06 against the FP32 reference (at most {TOLERANCE:g})"


def test_the_report_page_says_each_top_rows_contract_and_errors(backend, db):
    from autotune.explain.ladder import Line, ReportData
    from autotune.explain.model import PRESETS
    from autotune.explain.page import roofline_lines, top_table

    row = evaluate(db, backend, tf32(3), Limits(), None).row
    line = Line("#1", tf32(3), row, {})
    data = ReportData(SHAPE, "db", "h200", PRESETS["h200"], [], [], line, [line], None)
    table = "\n".join(top_table(data))
    assert "contract fp32-tc" in table and f"{row['err_ref']:.3g}" in table
    assert "contract fp32-tc" in " ".join(roofline_lines(data))
