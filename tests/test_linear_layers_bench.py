"""benchmarks/linear_layers.py (autotune.torch.Linear against nn.Linear): its summary and its arguments."""
from __future__ import annotations

import math

import pytest

from tests.programs import program

pytest.importorskip("torch", reason="torch is not installed (pip install torch; CI installs a CPU build)")


@pytest.fixture(scope="module")
def layers():
    return program("benchmarks", "linear_layers")


def _row(torch_ms: float, ours_ms: float, runs: str) -> dict:
    return {"torch_ms": torch_ms, "ours_ms": ours_ms, "torch_alone_ms": 2 * torch_ms, "ours_alone_ms": ours_ms,
            "runs": runs}


def test_the_summary_reads_every_layer_and_apart_those_that_ran_our_kernel(layers):
    got = layers.summary([_row(1.0, 0.5, "kernel"), _row(0.9, 1.0, "F.linear"), _row(1.0, 1.0, "F.linear")])
    assert got["layers"] == 3 and got["below_0.95_queued"] == 1 and got["min_queued"] == pytest.approx(0.9)
    assert got["geomean_queued"] == pytest.approx((2.0 * 0.9 * 1.0) ** (1 / 3))
    assert got["geomean_alone"] == pytest.approx((4.0 * 1.8 * 2.0) ** (1 / 3))
    assert got["kernel_layers"] == 1 and got["kernel_geomean_queued"] == pytest.approx(2.0)
    assert math.isnan(layers.summary([_row(1.0, 1.0, "F.linear")])["kernel_geomean_queued"])


def test_the_summary_reads_the_control_where_layers_had_one(layers):
    rows = [{**_row(1.0, 1.0, "F.linear"), "control": c} for c in (0.9, 1.1)] + [_row(1.0, 1.0, "F.linear")]
    got = layers.summary(rows)
    assert got["control_geomean"] == pytest.approx((0.9 * 1.1) ** 0.5)
    assert (got["control_min"], got["control_max"]) == (0.9, 1.1)
    assert "control_geomean" not in layers.summary(rows[2:])


@pytest.mark.parametrize("argv, said", [(["--rows", "0"], "--rows: pass at least 1"),
                                        (["--count", "x"], "'x': pass a whole number of shapes, 0 or more")])
def test_a_bad_count_is_one_line_and_exit_2(layers, argv, said, monkeypatch, capsys):
    monkeypatch.setattr("sys.argv", ["linear_layers.py", *argv])
    with pytest.raises(SystemExit) as stop:
        layers.main()
    assert stop.value.code == 2 and said in capsys.readouterr().err.strip().splitlines()[-1]


class _Event:
    """A CUDA event that reads a clock of its own: the units of work the calls between two records did."""
    calls = 0

    def __init__(self, enable_timing: bool = True):
        self.at = 0

    def record(self):
        self.at = _Event.calls

    def synchronize(self):
        pass

    def elapsed_time(self, end: "_Event") -> float:
        return float(end.at - self.at)


def test_compared_times_both_calls_and_reads_the_error_of_ours(layers, monkeypatch):
    """anyshape.compared, the timing both benchmarks share, on a CPU with events that count units of work: theirs
    costs one a call and ours two, so each reads its own cost queued and alone; the error is ours against theirs."""
    from types import SimpleNamespace

    import torch

    fake = SimpleNamespace(cuda=SimpleNamespace(Event=_Event, synchronize=lambda: None), linalg=torch.linalg)
    ref = torch.ones(3, 3)

    def call(value, cost: int):
        def run():
            _Event.calls += cost
            return value
        return run

    timed, reps = layers.compared(fake, call(ref * 1.5, 2), call(ref, 1), rounds=2, alone=3)
    assert reps == 5 and timed["err"] == pytest.approx(0.5)
    assert [timed[k] for k in ("torch_ms", "ours_ms", "torch_alone_ms", "ours_alone_ms")] == [1.0, 2.0, 1.0, 2.0]
