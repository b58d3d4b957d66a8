"""`autotune cover` without a GPU: the products a workload makes (a range of M, a model's Linear layers
with their backward products), the report of what load() then runs, and the command end to end on the
emulator."""
from __future__ import annotations

import math

import pytest
from click.testing import CliRunner

from autotune import store
from autotune.api.cover import Product, from_module, from_range, report, summary_lines
from autotune.cli import cli
from autotune.errors import AutotuneError
from tests.test_dispatch_library import SMALL, timed


def tiny_model():
    import torch

    return torch.nn.Sequential(torch.nn.Linear(32, 16), torch.nn.ReLU(), torch.nn.Linear(16, 8),
                               torch.nn.Linear(16, 8))  # the last two make the same products


def test_a_range_of_m_is_its_ends_and_the_powers_of_two_between():
    assert [p.shape[0] for p in from_range("3:40", 64, 128)] == [3, 4, 8, 16, 32, 40]
    assert {p.shape[1:] for p in from_range("1:1", 64, 128, "NT")} == {(64, 128)}
    with pytest.raises(AutotuneError, match="is not LO:HI"):
        from_range("8-16", 64, 64)


def test_a_models_linear_layers_make_the_forward_and_with_training_the_two_backward_products():
    pytest.importorskip("torch")
    spec = "tests.test_cover:tiny_model"
    assert [(p.shape, p.layout) for p in from_module(spec, [4], False)] == [((4, 16, 32), "NT"), ((4, 8, 16), "NT")]
    training = {(p.shape, p.layout) for p in from_module(spec, [4, 8], True)}
    assert ((4, 32, 16), "NN") in training and ((16, 32, 4), "TN") in training  # dX = dY W, dW = dY^T X
    assert len(training) == 12  # 2 distinct layers x 3 products x 2 batches
    with pytest.raises(AutotuneError, match="no torch.nn.Linear layer"):
        from_module("torch.nn:ReLU", [1], False)


def test_the_report_says_where_load_runs_a_kernel_and_what_it_gains(tmp_path):
    path = tmp_path / "r.sqlite"
    db = store.open_db(path)
    won = timed(db, (512, 512, 512), "blocked", 0.080, 0.100, **SMALL)
    timed(db, (1024, 512, 512), "blocked", 0.099, 0.100, **SMALL)
    db.close()
    rows = report(str(path), [Product((512, 512, 512), "NN", "a"), Product((1024, 512, 512), "NN", "b"),
                              Product((512, 512, 512), "NT", "c")])
    assert [(r["runs"], r["kernel"]) for r in rows][0] == ("kernel", won) and rows[0]["gain"] == pytest.approx(1.25)
    assert rows[1]["runs"] == "cuBLAS" and rows[2]["kernel"] is None  # nothing NT measured


def test_cover_tunes_each_product_on_the_emulator_and_reports_it(tmp_path):
    db = tmp_path / "c.sqlite"
    result = CliRunner().invoke(cli, ["cover", "--M-range", "8:16", "--N", "16", "--K", "32", "--budget", "30",
                                      "--trials", "2", "--backend", "sim", "--db", str(db),
                                      "--json", str(tmp_path / "c.json")])
    assert result.exit_code == 0, result.output
    assert "2 products; load() runs a tuned kernel at 0" in result.stdout  # emulator rows: no cuBLAS beside them
    assert {(r["M"], r["N"], r["K"]) for r in store.open_readonly(db).query("select M, N, K from results")} == {
        (8, 16, 32), (16, 16, 32)}
    assert (tmp_path / "c.json").exists()


@pytest.mark.parametrize("args,words", [
    (["--M-range", "1:8", "--shapes", "x.toml"], "give one of --shapes FILE"),
    (["--M-range", "1:8"], "--M-range needs --N and --K"),
    (["--M-range", "1:8", "--N", "8", "--K", "8", "--budget", "0"], "--budget 0.0 must be a positive number"),
])
def test_cover_refuses_what_it_cannot_do_in_one_line(args, words, tmp_path):
    result = CliRunner().invoke(cli, ["cover", *args, "--backend", "sim", "--db", str(tmp_path / "x.sqlite")])
    assert result.exit_code == 2 and words in result.output and len(result.output.strip().splitlines()) == 1


def test_cover_searches_the_families_and_values_it_is_given(tmp_path):
    """--family and -p narrow every product's search, as search's do: a family without transposes (tiled)
    computes the NN products a shapes file makes, and -p keeps to the values given."""
    db = tmp_path / "f.sqlite"
    result = CliRunner().invoke(cli, ["cover", "--M-range", "8:8", "--N", "16", "--K", "32", "--family", "tiled",
                                      "-p", "T=8", "--budget", "30", "--trials", "2", "--backend", "sim",
                                      "--db", str(db)])
    assert result.exit_code == 0, result.output
    rows = store.open_readonly(db).query("select family, kernel from results")
    assert rows and all(r["family"] == "tiled" and r["kernel"].startswith("sgemm_tiled_T8_") for r in rows)


def test_cover_refuses_a_parameter_no_family_given_has_in_one_line(tmp_path):
    result = CliRunner().invoke(cli, ["cover", "--M-range", "8:8", "--N", "16", "--K", "32", "--family", "tiled",
                                      "-p", "CS=1", "--backend", "sim", "--db", str(tmp_path / "x.sqlite")])
    assert result.exit_code == 2 and "no family searched has a parameter 'CS'" in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_cover_refuses_a_budget_spent_on_starting_searches_in_one_line(tmp_path):
    """Each product's search times cuBLAS before its first trial: a budget of less than MIN_SHARE_S a product
    would measure nothing, so it is refused with the budget that would do."""
    from autotune.api.cover import MIN_SHARE_S

    args = ["cover", "--M-range", "1:64", "--N", "16", "--K", "32", "--backend", "sim", "--db", str(tmp_path / "x.sqlite")]
    too_little = CliRunner().invoke(cli, [*args, "--budget", str(MIN_SHARE_S * 7 - 1)])  # 1, 2, 4, ..., 64: 7 products
    assert too_little.exit_code == 2 and len(too_little.output.strip().splitlines()) == 1
    assert f"give --budget {math.ceil(MIN_SHARE_S * 7)} or more, or fewer products" in too_little.output
    assert not (tmp_path / "x.sqlite").exists()


def test_the_summary_says_at_how_many_products_no_kernel_was_verified():
    rows = [{"M": 8, "N": 8, "K": 8, "layout": "NN", "kernel": None, "ms": None, "cublas_ms": None, "gain": None,
             "runs": "cuBLAS"}]
    assert summary_lines(rows)[-1].endswith("; no kernel verified at 1 (the budget spent, or every trial failed)")
