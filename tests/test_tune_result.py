"""autotune.tune() returns a TuneResult: the best row, the counts, the seconds and the exit status,
the figures the summary it prints gives (on the emulator, at a tiny shape)."""
from __future__ import annotations

import dataclasses

import pytest

import autotune
from autotune import store
from autotune.api.result import TuneResult

SHAPE = (24, 20, 9)


@pytest.fixture(scope="module")
def tuned(tmp_path_factory):
    path = tmp_path_factory.mktemp("tune") / "r.sqlite"
    return path, autotune.tune(*SHAPE, family="naive", backend="sim", trials=3, sampler="random", seed=2,
                               db=str(path))


def test_tune_returns_a_frozen_result_with_the_status_the_counts_and_the_best_row(tuned):
    path, result = tuned
    assert isinstance(result, TuneResult)
    assert result.status == 0 and not result.interrupted
    assert result.new == 3 and result.trials >= 3
    assert sum(result.statuses.values()) == result.trials and result.statuses.get("ok", 0) >= 1
    assert result.seconds > 0 and result.study
    rows = list(store.results(store.open_readonly(path), SHAPE, "sim"))
    fastest = min((r for r in rows if r["status"] == "ok"), key=lambda r: r["time_ms"])
    assert result.best is not None and result.best["kernel"] == fastest["kernel"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.status = 1  # type: ignore[misc]


def test_the_result_is_what_the_printed_summary_says(tmp_path, capsys):
    result = autotune.tune(*SHAPE, family="naive", backend="sim", trials=2, sampler="random", seed=5,
                           db=str(tmp_path / "r.sqlite"))
    out = capsys.readouterr().out
    assert f"study {result.study}: {result.trials} trials, {result.new} new measurements" in out
    assert "statuses: " + ", ".join(f"{k} {v}" for k, v in sorted(result.statuses.items())) in out
    assert result.best is not None and f"  {result.best['kernel']}" in out
