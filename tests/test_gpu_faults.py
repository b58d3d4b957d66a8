"""On a GPU: faults injected through the real CUDA worker path. Each broken kernel is one row
with its status and the driver's message, the poisoned worker is replaced, the search goes on.
Quick: a small shape and a one-second watchdog per launch.

    AUTOTUNE_REQUIRE_GPU=1 pytest -m gpu tests/test_gpu_faults.py -v
"""
from __future__ import annotations

import pytest
from click.testing import CliRunner

from autotune import store
from autotune.backends.child import WorkerSpec
from autotune.backends.pool import start_workers
from autotune.search.loop import run_search
from tests.faulty import faulty_family, faulty_render

pytestmark = pytest.mark.gpu
SHAPE = (256, 192, 128)
SOURCE = {  # fault -> (status, what the reason must contain, lower case)
    "illegal": ("launch_error", "illegal"),
    "misaligned": ("launch_error", "misaligned"),
    "hang": ("timeout", "the watchdog stopped it"),
    "wrong": ("wrong", "relative error"),
    "compile": ("compile_error", "error"),
    "none": ("ok", ""),
}
WORKER = {
    "die": ("launch_error", "the worker died (killed by sigsegv"),
    "stall": ("timeout", "the watchdog stopped it"),
    "devfault": ("launch_error", "injected"),
    "none": ("ok", ""),
}


@pytest.fixture(autouse=True)
def broken_sources(monkeypatch):
    monkeypatch.setattr("autotune.search.plan.render", faulty_render)


def search_faults(db, kind: str, expected: dict) -> tuple[dict, object]:
    faults = tuple(expected)
    [worker] = start_workers([WorkerSpec(kind, SHAPE, seed=3, device=0, kernel_timeout=1.0)])
    try:
        result = run_search(db, worker, [faulty_family(faults)], worker.limits, sampler="grid",
                            trials=len(faults), peak_tflops=worker.peak_tflops)
    finally:
        worker.close()
    assert result.new == len(faults) and not result.interrupted
    rows = {r["fault"]: r for r in db.query("select * from results")}
    for fault, (status, words) in expected.items():
        assert rows[fault]["status"] == status, (fault, rows[fault]["reason"])
        assert words in rows[fault]["reason"].lower(), (fault, rows[fault]["reason"])
        assert rows[fault]["device"] == "0" and rows[fault]["worker"] == worker.worker
    return rows, worker


def test_kernel_faults_are_rows_and_the_search_goes_on(db):
    rows, worker = search_faults(db, "cuda", SOURCE)
    assert worker.restarts == 3  # illegal address, misaligned address, hang: each poisons or blocks a context
    assert rows["none"]["tflops"] > 0 and rows["none"]["id"] > rows["hang"]["id"]


def test_worker_faults_are_rows_and_the_search_goes_on(db):
    _, worker = search_faults(db, "tests.faulty:faulty_cuda", WORKER)
    assert worker.restarts == 3


def test_a_recorded_fault_is_not_run_again(db):
    search_faults(db, "cuda", {"illegal": SOURCE["illegal"], "none": SOURCE["none"]})
    [worker] = start_workers([WorkerSpec("cuda", SHAPE, seed=3, device=0, kernel_timeout=1.0)])
    try:
        result = run_search(db, worker, [faulty_family(("illegal", "none"))], worker.limits, sampler="random",
                            trials=2)
    finally:
        worker.close()
    assert result.new == 0 and worker.restarts == 0


def test_search_command_records_worker_and_device(tmp_path):
    from autotune.cli import cli

    path = tmp_path / "gpu.sqlite"
    result = CliRunner().invoke(cli, ["search", "--M", "256", "--family", "naive,tiled", "--sampler", "random",
                                      "--trials", "3", "--devices", "0", "--kernel-timeout", "1", "--db", str(path)])
    assert result.exit_code == 0, result.output
    rows = list(store.open_db(path).query("select * from results where status != 'invalid'"))
    assert len(rows) == 3 and {r["device"] for r in rows} == {"0"} and all(r["worker"] for r in rows)
