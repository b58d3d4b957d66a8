"""load(tune="background") without a GPU: a call kind planned onto cuBLAS runs cuBLAS at once and is
queued (once, in a bounded queue, at the cost of an enqueue); the tuner's rows decide the calls after it;
a tuner that fails leaves cuBLAS and says so once. With the emulator, one real job in its own process."""
from __future__ import annotations

import itertools
import logging
import statistics
import threading
import time
from pathlib import Path

import pytest

import autotune
from autotune import store
from autotune.api.firstuse.background import MAX_PENDING, Background, background_of
from autotune.api.firstuse.tuner import Budget, Job, SubprocessTuner
from autotune.api.operands import Layout
from autotune.errors import AutotuneError
from tests.fakes import GPU, FakeLauncher
from tests.test_api import DeviceArray
from tests.test_dispatch_library import SMALL, timed

ROOT = Path(__file__).resolve().parent.parent

SHAPE = (512, 384, 256)  # M, N, K: no row anywhere


class FakeTuner:
    """Records its jobs; each waits for `release`, then runs `work` (None: does nothing)."""

    def __init__(self, work=None, released=True):
        self.jobs: list[Job] = []
        self.work = work
        self.release = threading.Event()
        if released:
            self.release.set()

    def tune(self, job: Job) -> None:
        self.jobs.append(job)
        self.release.wait(10)
        if self.work is not None:
            self.work(job)

    def stop(self) -> None:
        self.release.set()


@pytest.fixture
def path(tmp_path):
    path = str(tmp_path / "mine.sqlite")
    store.open_db(path).close()
    return path


def operands(shape, trans_b=False):
    M, N, K = shape
    return DeviceArray((M, K), 0x1000000), DeviceArray((N, K) if trans_b else (K, N), 0x2000000)


def call(mm, shape, out=0x3000000):
    A, B = operands(shape)
    return mm(A, B, out=DeviceArray(shape[:2], out))


def kernels(launcher):
    return [launch["kernel"] for launch in launcher.launches]


def test_a_shape_seen_first_runs_cublas_at_once_and_is_queued_once(path, launcher):
    tuner = FakeTuner(released=False)
    mm = autotune.load(db=path, launcher=launcher)
    background = Background(mm, tuner)
    A, B = operands(SHAPE)
    mm(A, B, out=DeviceArray(SHAPE[:2], 0x3000000))
    mm(A, B, out=DeviceArray(SHAPE[:2], 0x3000000))
    mm(A, B, out=DeviceArray(SHAPE[:2], 0x40000, strides=(SHAPE[1] + 1, 1)))  # another call kind, same shape
    A, Bt = operands(SHAPE, trans_b=True)
    mm(A, Bt, out=DeviceArray(SHAPE[:2], 0x3000000), trans_b=True)  # another layout: a job of its own
    assert kernels(launcher) == ["cublas"] * 4  # none waited for the tuner, which is still held
    tuner.release.set()
    assert background.wait(5)
    assert [(j.shape, j.layout, j.gpu) for j in tuner.jobs] == [(SHAPE, "NN", GPU), (SHAPE, "NT", GPU)]
    assert background_of(mm) is background and background.failures == 0


def test_the_callers_cost_is_an_enqueue_and_the_queue_is_bounded(path, launcher):
    tuner = FakeTuner(released=False)  # busy with the first shape for the whole test
    background = Background(autotune.load(db=path, launcher=launcher), tuner)
    layout = Layout(False, False)
    took = []
    for M in range(1, 2 * MAX_PENDING + 1):
        start = time.perf_counter()
        background.offer(0, (M, 64, 64), layout)
        took.append(time.perf_counter() - start)
    # the stated bound (background.py): no I/O, no wait, whatever the tuner does (held here: a wait on it would
    # never return). The median call is within it; a busy test machine may preempt one call, never for long.
    assert statistics.median(took) < 1e-3 and max(took) < 0.05
    assert background.dropped == MAX_PENDING  # the first is in flight and counts among those pending
    tuner.release.set()
    assert background.wait(5) and len(tuner.jobs) == MAX_PENDING


def test_after_the_tuner_records_a_winner_the_next_call_runs_it(path, launcher):
    def record_a_winner(job: Job) -> None:
        db = store.open_db(path)
        timed(db, job.shape, "blocked", 0.08, 0.10, **SMALL)  # beats cuBLAS timed beside it by 20%
        db.close()

    mm = autotune.load(db=path, launcher=launcher)
    background = Background(mm, FakeTuner(record_a_winner))
    call(mm, SHAPE)
    mm._fast[("a torch call",)] = None  # type: ignore[assignment]  # the short ways, forgotten too
    assert background.wait(5)
    assert not mm._fast
    call(mm, SHAPE)
    assert kernels(launcher)[0] == "cublas" and kernels(launcher)[1].startswith("loaded sgemm_blocked")
    assert mm.choose(*SHAPE).origin == "exact"


def test_a_failing_tuner_leaves_cublas_and_warns_once(path, launcher, caplog):
    def fail(job: Job) -> None:
        raise RuntimeError("the GPU fell off the bus")

    mm = autotune.load(db=path, launcher=launcher)
    tuner = FakeTuner(fail)
    background = Background(mm, tuner)
    with caplog.at_level(logging.INFO, logger="autotune.api.firstuse"):
        for shape in [SHAPE, (96, 96, 96)]:
            call(mm, shape)
            assert background.wait(5)
            call(mm, shape)  # planned again (the failed tuning dropped every plan), not queued again
    assert kernels(launcher) == ["cublas"] * 4 and background.failures == 2 and len(tuner.jobs) == 2
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == 1 and "the GPU fell off the bus; it stays on cuBLAS" in warned[0]


def test_a_plan_made_while_the_shape_is_forgotten_is_not_kept(path, launcher):
    mm = autotune.load(db=path, launcher=launcher)
    mm.on_library = lambda device, shape, layout: mm.forget(shape)  # a tuner ending mid-plan
    call(mm, SHAPE)
    assert not mm._plans


@pytest.mark.parametrize("kwargs, says", [
    ({"tune": "sometimes"}, "one of 'off', 'background'"),
    ({"tune": "background", "defaults_only": True}, "drop defaults_only"),
    ({"tune": "background", "gpu": "NVIDIA H200"}, "drop gpu="),
    ({"tune": "background", "tune_trials": 0}, "tune_trials=0"),
    ({"tune": "background", "tune_seconds": float("inf")}, "tune_seconds=inf"),
])
def test_bad_tuning_options_are_one_line(path, launcher, kwargs, says):
    with pytest.raises(AutotuneError, match=says):
        autotune.load(db=path, launcher=launcher, **kwargs)


def test_a_shipped_database_is_never_written(launcher):
    for shipped in store.shipped_databases():  # one a GPU model
        with pytest.raises(AutotuneError, match="a database the package ships"):
            autotune.load(db=shipped, launcher=launcher, tune="background")


class EmulatorLauncher(FakeLauncher):
    def device_name(self, device):
        return "CPU emulator"  # the GPU model the emulator's rows are recorded under


def test_a_job_in_its_own_process_records_verified_rows_that_the_next_call_reads(tmp_path):
    path = str(tmp_path / "made.sqlite")  # created by load()
    mm = autotune.load(db=path, backend="sim", launcher=EmulatorLauncher(), tune="background", tune_trials=2,
                       tune_seconds=60)
    shape = (48, 40, 32)
    call(mm, shape)
    background = background_of(mm)
    assert background is not None and background.wait(120) and background.failures == 0
    rows = list(store.results(store.open_readonly(path), shape, "sim", "CPU emulator"))
    assert len(rows) == 2 and {r["status"] for r in rows} == {"ok"}
    # the emulator times no cuBLAS, so its rows are no evidence: cuBLAS stays, now for a reason the rows give
    assert mm.choose(*shape).library and "the fastest kernel measured at 48x40x32" in mm.choose(*shape).why


def test_process_exit_stops_a_job_in_flight_and_leaves_whole_rows(tmp_path):
    path = str(tmp_path / "stopped.sqlite")
    store.open_db(path).close()
    mm = autotune.load(db=path, backend="sim", launcher=EmulatorLauncher())
    tuner = SubprocessTuner(path, "sim", "fp32", Budget(trials=50, seconds=600))
    background = Background(mm, tuner)
    shape = (384, 320, 256)  # each emulated trial takes a while: the job is still in flight after its first row
    call(mm, shape)
    deadline = time.monotonic() + 60
    while tuner._process is None and time.monotonic() < deadline:
        time.sleep(0.05)
    process = tuner._process
    assert process is not None
    # into its measurements: stopped once it has committed a row (a fixed sleep let a job whose kernels were
    # already compiled by earlier tests finish first)
    deadline = time.monotonic() + 120
    while not list(store.results(store.open_readonly(path), shape, "sim", "CPU emulator")):
        assert time.monotonic() < deadline, "no row committed in 120 s"
        time.sleep(0.05)
    background.close()  # what atexit runs
    assert process.wait(10) is not None
    assert store.open_db(path).execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert not background.wait(0)  # the shape it was tuning was not finished


def test_the_candidates_take_turns_neighbours_winners_and_the_fits_that_moved_then_the_defaults(db):
    from autotune.families import FAMILIES
    from autotune.search.ranking import AsFound, candidates
    from autotune.space import Limits
    from tests.fakes import FakeBackend
    from tests.test_starts import record

    first = record(db, (3000, 3000, 64), "blocked", 0.5, **SMALL)
    second = record(db, (3000, 3000, 64), "naive", 0.9)
    backend = FakeBackend(3072, 2900, 64)
    families = [FAMILIES[f] for f in ("naive", "blocked", "splitk")]
    found = AsFound().rank(candidates(db, backend, families, Limits(), measured=set()), backend.shape)
    # split-K's fit moved at K = 64: it comes between the neighbour's two winners, however many there are
    assert [c.name for c in found[:3]] == [first, found[1].name, second] and found[1].family.name == "splitk"
    assert found[3].family.name == "blocked"  # then the defaults, blocked's first
    assert len({c.name for c in found}) == len(found) and "naive" in {c.family.name for c in found}
    assert first not in {c.name for c in candidates(db, backend, families, Limits(), measured={first})}


class FakeWorker:
    name, provenance = "cuda", {"gpu_name": GPU}


def test_the_time_model_ranks_the_candidates_where_enough_rows_teach_it(tmp_path):
    from autotune.families import FAMILIES
    from autotune.search.ranking import AsFound, ByTimeModel, make_ranker
    from autotune.space import Limits, make_config
    from tests.test_starts import record

    db = store.open_db(tmp_path / "r.sqlite")
    big = {"BM": 128, "BN": 128, "BK": 8, "WM": 64, "WN": 64, "WNITER": 2, "TM": 8, "TN": 4}
    shapes = [(m, n, k) for m in (256, 1024, 4096) for n in (512, 2048, 8192) for k in (64, 512, 4096)]
    for M, N, K in shapes[:4]:  # too few rows and shapes yet: the neighbours' order stands
        record(db, (M, N, K), "blocked", 2 * M * N * K / 40e9, backend="cuda", gpu=GPU, **big)
    assert isinstance(make_ranker(db, FakeWorker(), Limits()), AsFound)
    for M, N, K in shapes:  # a large tile near the FMA rate, a small one at a tenth of it
        record(db, (M, N, K), "blocked", 2 * M * N * K / 40e9 + 0.005, backend="cuda", gpu=GPU, **big)
        for stages, pad, group in itertools.product((1, 2), (0, 4), (1, 8)):
            small = {**SMALL, "STAGES": stages, "pad": pad, "GM": group}
            record(db, (M, N, K), "blocked", 2 * M * N * K / 4e9 + 0.001 * stages, backend="cuda", gpu=GPU, **small)
    ranker = make_ranker(db, FakeWorker(), Limits())
    assert isinstance(ranker, ByTimeModel)
    slow, fast = make_config(FAMILIES["blocked"], SMALL), make_config(FAMILIES["blocked"], big)
    assert ranker.rank([slow, fast], (3000, 3000, 3000)) == [fast, slow]


def test_the_ranker_fits_again_only_once_the_rows_have_grown_by_a_tenth(tmp_path, monkeypatch):
    # a cover ranks at every product while adding a dozen rows each: the fit (about a second) is not redone each time
    from autotune.explain.timemodel import TimeModel
    from autotune.search import ranking
    from autotune.space import Limits
    from tests.test_starts import record

    fits, fit = [], TimeModel.fit

    def counted(rows: list, limits: Limits) -> TimeModel:
        fits.append(len(rows))
        return fit(rows, limits, trees_too=False)  # the ridge alone: the count is what is tested

    monkeypatch.setattr(ranking, "_fitted", {})
    monkeypatch.setattr(ranking.TimeModel, "fit", counted)
    db = store.open_db(tmp_path / "r.sqlite")
    shapes = [(m, n, 64) for m in (256, 512, 1024, 2048) for n in (256, 512, 1024, 2048)]

    def add(count: int) -> None:
        for i in range(count):
            M, N, K = shapes[i % len(shapes)]
            record(db, (M, N, K + len(fits) * 1000 + db["results"].count), "blocked", 0.01, backend="cuda", gpu=GPU)

    add(200)
    for extra in (0, 10, 9):  # 200, 210, 219 rows: the first fit stands
        add(extra)
        assert isinstance(ranking.make_ranker(db, FakeWorker(), Limits()), ranking.ByTimeModel)
    assert fits == [200]
    add(1)  # 220 rows: a tenth more than 200
    ranking.make_ranker(db, FakeWorker(), Limits())
    other = store.open_db(tmp_path / "other.sqlite")  # another database is fitted on its own rows
    for M, N, K in shapes * 14:  # 224 rows: within a tenth of the first database's 220
        record(other, (M, N, K + other["results"].count), "blocked", 0.01, backend="cuda", gpu=GPU)
    ranking.make_ranker(other, FakeWorker(), Limits())
    assert fits == [200, 220, 224]


def test_the_shipped_model_rows_are_the_suites_and_rank_from_a_new_databases_first_shape(tmp_path, monkeypatch):
    # a new database on an H200 holds no rows, yet the model orders its first trials from the rows the package ships
    import subprocess
    import sys

    from autotune.search import ranking
    from autotune.space import Limits

    monkeypatch.setattr(ranking, "_fitted", {})
    shipped = store.db.TUNED / "h200-model-rows.json.gz"
    out = tmp_path / "rows.json.gz"
    subprocess.run([sys.executable, str(ROOT / "scripts" / "ship_model_rows.py"),
                    str(ROOT / "benchmarks" / "data" / "h200-suite.sqlite.gz"), "NVIDIA H200", str(out)], check=True)
    assert out.read_bytes() == shipped.read_bytes()  # what the script makes of the suite database, byte for byte
    assert len(store.shipped_model_rows("NVIDIA H200")) == 2995 and store.shipped_model_rows("Fake GPU") == []

    class OnTheH200:
        name, provenance = "cuda", {"gpu_name": "NVIDIA H200"}

    class Emulated:
        name, provenance = "sim", {"gpu_name": "NVIDIA H200"}

    db = store.open_db(tmp_path / "new.sqlite")
    assert isinstance(ranking.make_ranker(db, OnTheH200(), Limits()), ranking.ByTimeModel)
    assert isinstance(ranking.make_ranker(db, FakeWorker(), Limits()), ranking.AsFound)  # another GPU: none shipped
    assert isinstance(ranking.make_ranker(db, Emulated(), Limits()), ranking.AsFound)  # GPU times are not the emulator's
