"""Workers kept across shapes (backends.pool.KeptWorkers, WorkerBackend.reshape): a search of many shapes in turn
(autotune cover, the suite) starts its child process once; each later shape is built in that same child, and
a child that is gone, or a shape it cannot build, costs that shape alone."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

from autotune import store
from autotune.backends.child import WorkerSpec
from autotune.backends.pool import KeptWorkers
from autotune.backends.worker import WorkerBackend
from autotune.cli import cli
from autotune.errors import AutotuneError
from autotune.families import NAIVE
from autotune.space import make_config

CONFIG = make_config(NAIVE, {})


@pytest.fixture
def kept():
    workers = KeptWorkers()
    yield workers
    workers.close()


def measured_at(worker: WorkerBackend, shape: tuple[int, int, int]) -> None:
    from autotune.codegen.render import render

    outcome = worker.measure(CONFIG, render(CONFIG))
    assert outcome.status == "ok", outcome.reason
    assert worker.shape == worker.info.shape == shape  # type: ignore[union-attr]


def test_a_kept_worker_moves_to_each_shape_in_the_same_child(kept):
    [worker] = kept.at([WorkerSpec("sim", (24, 20, 9))])
    measured_at(worker, (24, 20, 9))
    pid = worker._proc.pid  # type: ignore[union-attr]
    for shape in [(7, 33, 5), (1, 16, 64)]:
        assert kept.at([WorkerSpec("sim", shape)]) == [worker]
        measured_at(worker, shape)
        assert worker._proc.pid == pid  # type: ignore[union-attr]
    assert worker.restarts == 0
    kept.close()
    assert worker._proc is None


def test_a_kept_worker_whose_child_is_gone_starts_afresh_at_the_new_shape(kept):
    [worker] = kept.at([WorkerSpec("sim", (24, 20, 9))])
    worker._kill()  # as a kernel's fault leaves it
    kept.at([WorkerSpec("sim", (7, 33, 5))])
    measured_at(worker, (7, 33, 5))


def test_a_shape_the_child_cannot_build_is_one_error_and_the_next_shape_still_runs(kept):
    kept.at([WorkerSpec("sim", (24, 20, 9))])
    with pytest.raises(AutotuneError, match="too large for the emulator"):
        kept.at([WorkerSpec("sim", (4096, 4096, 4096))])
    [worker] = kept.at([WorkerSpec("sim", (7, 33, 5))])
    measured_at(worker, (7, 33, 5))


def test_specs_that_differ_in_more_than_shape_get_new_workers(kept):
    [first] = kept.at([WorkerSpec("sim", (24, 20, 9))])
    [second] = kept.at([WorkerSpec("sim", (24, 20, 9), seed=3)])
    assert second is not first and first._proc is None and second.spec.seed == 3


def test_cover_starts_one_worker_for_all_its_products(tmp_path, monkeypatch):
    starts = []
    start = WorkerBackend.start
    monkeypatch.setattr(WorkerBackend, "start", lambda self: (starts.append(self.spec.shape), start(self))[1])
    db = tmp_path / "c.sqlite"
    result = CliRunner().invoke(cli, ["cover", "--M-range", "4:16", "--N", "16", "--K", "32", "--budget", "60",
                                      "--trials", "1", "--family", "naive", "--backend", "sim", "--db", str(db)])
    assert result.exit_code == 0, result.output
    assert starts == [(4, 16, 32)]
    assert {(r["M"], r["N"], r["K"]) for r in store.open_readonly(db).query("select M, N, K from results")} == {
        (4, 16, 32), (8, 16, 32), (16, 16, 32)}


@pytest.mark.gpu
def test_a_kept_cuda_worker_measures_and_times_cublas_at_each_shape_and_a_fault_costs_one_shape(kept):
    """On the GPU: the child builds its backend again at each shape (its cuBLAS handle freed with the old one's,
    its baselines timed anew), and a kernel that faults at one shape leaves the next shape a fresh child."""
    from tests.faulty import faulty_family, faulty_render

    shapes = [(256, 192, 128), (128, 64, 4096), (1000, 3, 77), (256, 192, 128)]
    for shape in shapes:
        [worker] = kept.at([WorkerSpec("cuda", shape, kernel_timeout=1.0)])
        assert worker.baseline is not None and worker.layout_baselines is not None
        measured_at(worker, shape)
    pid = worker._proc.pid  # type: ignore[union-attr]
    broken = make_config(faulty_family(("illegal",)), {"fault": "illegal"})
    assert worker.measure(broken, faulty_render(broken)).status == "launch_error"
    [worker] = kept.at([WorkerSpec("cuda", (64, 64, 64), kernel_timeout=1.0)])
    measured_at(worker, (64, 64, 64))
    assert worker._proc.pid != pid  # type: ignore[union-attr]
