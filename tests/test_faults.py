"""Faults injected through the real worker path on the emulator: each broken variant becomes
one row with its status and message, a lost worker is replaced, and the search goes on."""
from __future__ import annotations

import pytest

from autotune.backends.base import Job
from autotune.backends.child import Ready, WorkerSpec
from autotune.backends.outcome import Timing
from autotune.backends.pool import check_kernel_timeout, start_workers
from autotune.backends.sim.backend import SimBackend
from autotune.backends.worker import WorkerBackend
from autotune.errors import AutotuneError, EnvironmentFault
from autotune.search.loop import run_search
from autotune.space import Limits, make_config
from tests.faulty import faulty_family, faulty_render

SHAPE = (24, 20, 9)
EXPECTED = {  # fault -> (status, words the reason must contain)
    "oob": ("launch_error", "out_of_bounds"),
    "illegal": ("launch_error", "out_of_bounds"),
    "hang": ("timeout", "did not finish within 2 s"),
    "wrong": ("wrong", "relative error"),
    "compile": ("compile_error", ""),
    "die": ("launch_error", "the worker died (killed by SIGSEGV"),
    "stall": ("timeout", "the watchdog stopped it"),
    "devfault": ("launch_error", "CUDA_ERROR_ILLEGAL_ADDRESS (injected)"),
    "none": ("ok", ""),
}


@pytest.fixture(autouse=True)
def broken_sources(monkeypatch):
    monkeypatch.setattr("autotune.search.plan.render", faulty_render)


def test_every_fault_is_a_row_and_the_search_goes_on(db):
    faults = tuple(EXPECTED)
    [worker] = start_workers([WorkerSpec("tests.faulty:faulty_sim", SHAPE, kernel_timeout=2.0)], compile_s=60.0)
    try:
        result = run_search(db, worker, [faulty_family(faults)], Limits(), sampler="grid", trials=len(faults))
    finally:
        worker.close()
    rows = {r["fault"]: r for r in db.query("select * from results")}
    assert set(rows) == set(faults) and result.new == len(faults) and not result.interrupted
    for fault, (status, words) in EXPECTED.items():
        assert rows[fault]["status"] == status, (fault, rows[fault]["reason"])
        assert words in rows[fault]["reason"], (fault, rows[fault]["reason"])
        assert "\n" not in rows[fault]["reason"]
    assert worker.restarts == 3  # die, stall, devfault: each cost a worker, nothing else did
    assert {r["worker"] for r in rows.values()} == {worker.worker}
    assert {r["device"] for r in rows.values()} == {"sim"}


def test_a_recorded_fault_is_not_run_again(db):
    faults = ("die", "none")
    family = faulty_family(faults)
    for _ in range(2):
        [worker] = start_workers([WorkerSpec("tests.faulty:faulty_sim", SHAPE, kernel_timeout=2.0)])
        try:
            run_search(db, worker, [family], Limits(), sampler="random", trials=2, seed=1)
        finally:
            worker.close()
    assert db["results"].count == 2
    assert worker.restarts == 0  # the second search answered both from the database


def test_a_worker_that_cannot_start_is_one_error():
    with pytest.raises(AutotuneError, match="too large for the emulator"):
        start_workers([WorkerSpec("sim", (4096, 4096, 4096))])


def test_watchdog_limits():
    worker = WorkerBackend(WorkerSpec("cuda", (4096, 4096, 4096)), compile_s=60.0)
    ready = Ready("cuda", (4096,) * 3, Timing(2.5, 2.4, 2.6, 20), None, {}, True, Limits(), None, ((4096, 4096),), "0")
    worker.info = ready
    assert worker.launch_s() == pytest.approx(2.5)  # 1000 x cuBLAS's 2.5 ms
    assert worker.beat_s() == pytest.approx(3 * 2.5 + 1)
    assert worker.first_s() == pytest.approx(60 + 3 * 2.5 + 1)
    worker.info = Ready("cuda", (64,) * 3, Timing(0.01, 0.01, 0.01, 20), None, {}, True, Limits(), None, (), "0")
    assert worker.launch_s() == 1.0  # never below a second
    worker.spec = WorkerSpec("cuda", (64,) * 3, kernel_timeout=0.25)
    assert worker.launch_s() == 0.25  # --kernel-timeout wins
    worker.spec = WorkerSpec("sim", (64,) * 3)
    worker.info = Ready("sim", (64,) * 3, None, None, {}, False, Limits(), None, (), "sim", 60.0)
    assert worker.launch_s() == 60.0  # the emulator's own limit: it stops an endless loop itself


def test_an_environment_fault_mid_search_stops_it_and_records_nothing(db):
    # the machine, not the kernel (errors.EnvironmentFault, raised in the worker's backend): the
    # search stops with that one message, writes no row for the kernel and leaves no claim
    [worker] = start_workers([WorkerSpec("tests.faulty:faulty_sim", SHAPE, kernel_timeout=2.0)])
    try:
        with pytest.raises(EnvironmentFault, match="No space left on device"):
            run_search(db, worker, [faulty_family(("envfault",))], Limits(), sampler="grid", trials=1)
    finally:
        worker.close()
    assert db["results"].count == 0
    assert db.execute("select count(*) from claims").fetchone()[0] == 0
    assert worker.restarts == 0  # not counted as a lost worker: nothing about the kernel was learnt


def test_a_worker_whose_parent_is_gone_exits_quietly(capfd):
    # a search killed with SIGKILL mid-measurement: the worker's next message goes nowhere; it must
    # end without a BrokenPipeError traceback on the terminal they shared
    [worker] = start_workers([WorkerSpec("tests.faulty:faulty_sim", SHAPE, kernel_timeout=2.0)])
    config = make_config(faulty_family(("slow",)), {})
    child = worker._proc
    worker._conn.send(("measure", Job.of(config, worker.launch_shapes), faulty_render(config)))
    worker._conn.close()  # as the dead parent's end of the pipe: closed while the kernel runs
    child.join(30)
    worker._proc = None  # nothing left for close() to stop
    assert child.exitcode == 0, child.exitcode
    err = capfd.readouterr().err
    assert "Traceback" not in err and "BrokenPipe" not in err, err


def test_a_compiler_that_cannot_build_the_canary_is_an_environment_fault(monkeypatch):
    # /bin/false "compiles" nothing: the known-good kernel fails, so the toolchain is broken and no
    # search may start (rather than recording every kernel as compile_error)
    monkeypatch.setenv("CXX", "/bin/false")
    with pytest.raises(EnvironmentFault, match="known-good kernel sgemm_naive.*compile_error.*CXX"):
        SimBackend(*SHAPE)


def test_a_kernel_timeout_below_what_cublas_takes_is_refused():
    # on the GPU the floor is cuBLAS's time at the shape: a shorter watchdog would time out every kernel
    worker = WorkerBackend(WorkerSpec("cuda", (4096,) * 3, kernel_timeout=0.001))
    worker.info = Ready("cuda", (4096,) * 3, Timing(2.5, 2.4, 2.6, 20), None, {}, True, Limits(), None,
                        ((4096, 4096),), "0", min_launch_s=0.0025)
    with pytest.raises(AutotuneError, match=r"--kernel-timeout 0\.001 s is shorter .* at least --kernel-timeout 0\.0025"):
        check_kernel_timeout([worker])
    worker.spec = WorkerSpec("cuda", (4096,) * 3, kernel_timeout=0.0025)
    check_kernel_timeout([worker])  # the floor itself is enough
