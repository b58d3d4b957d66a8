"""Compile ahead (autotune/pipeline.py): while one trial measures, a pool of processes builds the
next trials' cubins into the cache and returns their SASS counts; evaluate() saves them once;
failures in the pool are the trial's to report; no trial asked ahead is left running and no
compile process outlives the search."""
import multiprocessing as mp
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from concurrent.futures import Future
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

from autotune.backends.outcome import COMPILE_ERROR, Outcome
from autotune.codegen.nvrtc import cache_dir, cache_key, compile_source
from autotune.codegen.render import render
from autotune.explain import counts as explain
from autotune.families import NAIVE, TILED
from autotune.search.loop import run_search, suggest
from autotune.search.pipeline import Ahead, BuildJob, Compiler, default_jobs, ready
from autotune.space import Limits, make_config
from tests.fakes import FakeBackend

needs_nvdisasm = pytest.mark.skipif(not explain.have_nvdisasm(), reason="nvdisasm is not installed")


class SlowGpu(FakeBackend):
    """Measures take a while, as on a GPU; records whether each cubin was already built."""
    compile_ahead = True
    explain = False

    def __init__(self, seconds: float = 1.0):
        super().__init__()
        self.seconds = seconds
        self.cached_at_measure: list[bool] = []

    def measure(self, config, source):
        self.cached_at_measure.append((cache_dir() / f"{cache_key(source, 'sm_90')}.cubin").exists())
        time.sleep(self.seconds)
        return super().measure(config, source)


class CompilingGpu(SlowGpu):
    """Compiles what it measures, as the GPU worker does: a source that fails is a compile_error."""

    def measure(self, config, source):
        if not compile_source(source, config.name, "sm_90").ok:
            return Outcome(COMPILE_ERROR, reason="does not compile")
        return super().measure(config, source)


def warm_nvrtc() -> None:
    warm = make_config(NAIVE, {"bx": 1024, "by": 1})
    compile_source(render(warm), warm.name)  # its first call takes seconds


def spy_study(monkeypatch) -> dict:
    captured = {}
    real = optuna.create_study

    def spy(*args, **kwargs):
        captured["study"] = real(*args, **kwargs)
        return captured["study"]

    monkeypatch.setattr(optuna, "create_study", spy)
    return captured


# --------------------------------------------------------------------------- Ahead, without processes

class FakeCompiler:
    """Records submissions; every job is done at once (or never, with `hold`)."""

    def __init__(self, hold: bool = False):
        self.jobs: list[BuildJob] = []
        self.hold = hold

    def submit(self, job: BuildJob) -> Future:
        self.jobs.append(job)
        future = Future()
        if not self.hold:
            future.set_result(None)
        return future


def ahead(plan, depth: int, compiler=None, wanted=lambda: 100, proposed=None):
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=3), direction="maximize")
    compiler = compiler or FakeCompiler()
    return Ahead(study, lambda trial: suggest(trial, [TILED]), plan, compiler, depth, wanted, proposed), study, compiler


def build_all(config):
    return BuildJob(config.name, f"// {config.name}", "sm_90", False)  # the fake compiler never reads it


def test_depth_trials_with_work_are_asked_ahead_in_order():
    a, study, compiler = ahead(build_all, depth=3)
    taken = [a.take() for _ in range(5)]
    assert [t.trial.number for t in taken] == [0, 1, 2, 3, 4]  # evaluated in the order asked
    assert len(a.queue) == 3 and len(compiler.jobs) == 8  # the five taken and three ahead
    assert [j.name for j in compiler.jobs[:5]] == [t.config.name for t in taken]


def test_trials_with_nothing_to_build_do_not_count_towards_the_depth():
    skip = {"n": 0}

    def every_other(config):
        skip["n"] += 1
        return build_all(config) if skip["n"] % 2 else None  # refused or in the database: no job

    a, _, compiler = ahead(every_other, depth=2)
    a.take()
    assert sum(x.work is not None for x in a.queue) == 2
    assert len(a.queue) >= 3 and len(compiler.jobs) == 3


def test_nothing_is_asked_beyond_what_the_search_still_wants():
    wanted = {"n": 1}
    a, _, compiler = ahead(build_all, depth=4, wanted=lambda: wanted["n"])
    a.take()
    assert len(a.queue) == 1
    wanted["n"] = 0
    a.take()
    assert len(a.queue) == 0 and len(compiler.jobs) == 2


def test_each_config_asked_ahead_is_noted_wasted_or_not():
    noted = []
    a, _, compiler = ahead(lambda config: None if config.values["T"] <= 16 else build_all(config), depth=2,
                           proposed=lambda config, wasted: noted.append((config.values["T"] <= 16, wasted)))
    a.take()
    assert noted and all(small == wasted for small, wasted in noted)  # nothing to build: wasted (search.fresh)
    assert any(wasted for _, wasted in noted) and len(noted) == len(a.queue) + 1


def test_a_sampler_that_never_needs_building_is_bounded():
    a, _, _ = ahead(lambda config: None, depth=2)
    a.take()
    assert len(a.queue) == 8  # QUEUE_PER_JOB x depth, then it stops asking


def test_trials_asked_ahead_are_pruned_on_close():
    a, study, _ = ahead(build_all, depth=3)
    taken = a.take()
    study.tell(taken.trial, 1.0)
    a.close()
    states = [t.state for t in study.trials]
    assert states == [TrialState.COMPLETE] + [TrialState.PRUNED] * 3


class Interrupted(BaseException):
    """Stands for KeyboardInterrupt (which pytest itself would catch)."""


def test_a_trial_taken_while_asking_more_fails_is_pruned_too():
    calls = {"n": 0}

    def interrupted_on_the_fourth(config):
        calls["n"] += 1
        if calls["n"] == 4:
            raise Interrupted
        return build_all(config)

    a, study, _ = ahead(interrupted_on_the_fourth, depth=2)
    study.tell(a.take().trial, 1.0)  # trial 0 evaluated; 1 and 2 asked ahead
    with pytest.raises(Interrupted):
        a.take()  # takes 1, then asking 3 is interrupted
    a.close()
    states = [t.state for t in study.trials]
    assert states == [TrialState.COMPLETE, TrialState.PRUNED, TrialState.PRUNED, TrialState.FAIL]


def test_ready_waits_and_swallows_failures():
    done, failed, late = Future(), Future(), Future()
    done.set_result({"ffma": 4})
    failed.set_exception(RuntimeError("nvdisasm failed"))
    assert ready(done) == {"ffma": 4}
    assert ready(failed) is None and ready(None) is None
    assert ready(late, limit_s=0.05) is None


def test_default_jobs_grow_with_the_gpu_workers_within_the_cores(monkeypatch):
    monkeypatch.setattr("autotune.search.pipeline.os.cpu_count", lambda: 32)
    assert [default_jobs(w) for w in (1, 2, 3, 4)] == [8, 16, 24, 27]  # 32 cores less the workers and the search
    monkeypatch.setattr("autotune.search.pipeline.os.cpu_count", lambda: 2)
    assert default_jobs(1) == default_jobs(2) == 1


# --------------------------------------------------------------------------- the pool of processes

@needs_nvdisasm
def test_the_pool_compiles_and_returns_counts_once_per_source():
    config = make_config(TILED, {"T": 16})
    source = render(config)
    compiler = Compiler(2)
    try:
        first = compiler.submit(BuildJob(config.name, source, "sm_90", True))
        again = compiler.submit(BuildJob(config.name, source, "sm_90", True))
        counts = ready(first)
    finally:
        compiler.close()
    assert again is first  # proposed twice, built once
    assert counts == explain.count_columns(__import__("autotune.explain.sass").explain.sass.analyze_source(config, source))
    assert (cache_dir() / f"{cache_key(source, 'sm_90')}.cubin").exists()


def test_a_failing_compile_in_the_pool_is_just_not_ready():
    compiler = Compiler(1)
    try:
        work = compiler.submit(BuildJob("broken", 'extern "C" __global__ void broken() { nonsense; }', "sm_90", True))
        assert ready(work) is None
    finally:
        compiler.close()


def test_close_leaves_no_process_behind():
    before = set(mp.active_children())
    compiler = Compiler(2)
    config = make_config(TILED, {})
    compiler.submit(BuildJob(config.name, render(config), "sm_90", False))
    compiler.submit(BuildJob("other", render(config).replace(config.name, "other"), "sm_90", False))
    time.sleep(0.5)  # the children are starting or compiling
    start = time.monotonic()
    compiler.close()
    assert time.monotonic() - start < 5  # children stop mid-compile
    assert set(mp.active_children()) <= before
    assert compiler.submit(BuildJob(config.name, render(config), "sm_90", False)) is None  # closed


def test_ctrl_c_in_the_terminal_does_not_stop_the_compile_processes():
    compiler = Compiler(2)
    try:
        first = compiler.submit(BuildJob("k0", 'extern "C" __global__ void k0() {}', "sm_90", False))
        for child in mp.active_children():  # the terminal sends SIGINT to the whole process group
            os.kill(child.pid, signal.SIGINT)
        second = compiler.submit(BuildJob("k1", 'extern "C" __global__ void k1() {}', "sm_90", False))
        ready(first), ready(second)
        assert first.exception() is None and second.exception() is None
    finally:
        compiler.close()


def _descendants_alive(pids: list[int]) -> list[int]:
    return [p for p in pids if Path(f"/proc/{p}").exists() and "Z" not in _state(p)]


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "Z"


def test_a_killed_search_takes_its_compile_processes_with_it(tmp_path):
    script = textwrap.dedent("""
        import multiprocessing as mp, time
        from autotune.search.pipeline import Compiler, BuildJob

        if __name__ == "__main__":
            compiler = Compiler(2)
            for i in range(4):
                compiler.submit(BuildJob(f"k{i}", 'extern "C" __global__ void k%d() {}' % i, "sm_90", False))
            time.sleep(1.0)
            print(" ".join(str(p.pid) for p in mp.active_children()), flush=True)
            time.sleep(60)
    """)
    path = tmp_path / "search.py"
    path.write_text(script)
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).parent.parent))
    proc = subprocess.Popen([sys.executable, str(path)], stdout=subprocess.PIPE, text=True, env=env)
    children = [int(p) for p in proc.stdout.readline().split()]
    assert children
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    deadline = time.monotonic() + 10
    while _descendants_alive(children) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _descendants_alive(children)


# --------------------------------------------------------------------------- a search process, signalled

SEARCH = textwrap.dedent("""
    import sys, threading
    from autotune import store
    from autotune.families import NAIVE
    from autotune.backends.pool import exit_status, start_workers, stop_on_signals
    from autotune.api.commands import summary
    from autotune.search.loop import run_search
    from autotune.backends.child import WorkerSpec

    if __name__ == "__main__":
        [worker] = start_workers([WorkerSpec("tests.fakes:compiling_fake", (256, 256, 256))])
        db = store.open_db(sys.argv[1])
        stop = threading.Event()
        try:
            with stop_on_signals(stop):
                result = run_search(db, [worker], [NAIVE], worker.limits, sampler="random", trials=40,
                                    seed=1, stop=stop, compile_jobs=2)
        finally:
            worker.close()
        print(summary(db, worker, result))
        sys.exit(exit_status(stop, result.interrupted))
""")


def start_search(tmp_path) -> tuple[subprocess.Popen, Path]:
    """A search with a worker process and the compile pool, in a session of its own (as in a terminal)."""
    script, db = tmp_path / "search.py", tmp_path / "search.sqlite"
    script.write_text(SEARCH)
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).parent.parent), AUTOTUNE_CACHE=str(tmp_path / "cache"))
    proc = subprocess.Popen([sys.executable, str(script), str(db)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, start_new_session=True)
    from tests.test_resume import wait_for

    wait_for(db, 2, proc)
    return proc, db


def left_behind(tmp_path) -> list[int]:
    """Processes of the search (the search, its worker, the compile pool) still alive after 10 s."""
    from tests.test_resume import processes_using

    deadline = time.monotonic() + 10
    while True:
        alive = [p for p in processes_using(tmp_path / "cache") if _state(p) != "Z"]
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.1)


def test_ctrl_c_stops_a_search_with_its_pool_cleanly(tmp_path):
    from tests.test_resume import check_database

    proc, db = start_search(tmp_path)
    os.killpg(proc.pid, signal.SIGINT)  # what the terminal does: the search and the compile processes
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "(interrupted)" in out and "Traceback" not in err
    assert not left_behind(tmp_path)
    rows = check_database(db)
    assert all(r["status"] in ("ok", "wrong", "invalid") for r in rows)


def test_a_killed_search_leaves_no_process_behind(tmp_path):
    from tests.test_resume import check_database

    proc, db = start_search(tmp_path)
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    assert not left_behind(tmp_path)  # the worker and the compile processes noticed and left
    check_database(db)


# --------------------------------------------------------------------------- in the search

def test_the_next_trials_are_compiled_while_this_one_measures(db):
    warm_nvrtc()
    backend = SlowGpu()
    result = run_search(db, backend, [NAIVE], Limits(), sampler="random", trials=4, seed=5, compile_jobs=2)
    assert result.new == 4
    # the first trial had nothing before it; every later one found its cubin built ahead
    assert backend.cached_at_measure[1:] == [True] * (len(backend.cached_at_measure) - 1)
    rows = list(db.query("select t_wait_s, t_render_s from results where status = 'ok'"))
    assert len(rows) == 4 and all(r["t_wait_s"] is not None and r["t_render_s"] is not None for r in rows)


def test_no_trial_is_left_running_when_the_search_stops(db, monkeypatch):
    captured = spy_study(monkeypatch)
    stop = threading.Event()
    result = run_search(db, SlowGpu(0.2), [NAIVE], Limits(), sampler="random", trials=10, seed=6, compile_jobs=2,
                        stop=stop, progress=lambda result, done: stop.set())
    assert result.trials == 1 and result.interrupted
    states = {t.state for t in captured["study"].trials}
    assert TrialState.RUNNING not in states and TrialState.PRUNED in states  # those asked ahead


@needs_nvdisasm
def test_counts_come_from_the_pool_and_are_saved_once(db, monkeypatch):
    warm_nvrtc()
    saved: list[str] = []
    real_save = explain.save_counts
    monkeypatch.setattr(explain, "save_counts", lambda db, config, source, arch, counts:
                        saved.append(config.name) or real_save(db, config, source, arch, counts))

    def no_disassembly_here(*args, **kwargs):
        raise AssertionError("the search process disassembled a kernel the pool had counted")

    monkeypatch.setattr(explain, "analyze_source", no_disassembly_here)
    backend = SlowGpu(0.3)
    backend.explain = True
    result = run_search(db, backend, [TILED], Limits(), sampler="random", trials=4, seed=8, compile_jobs=2)
    assert result.new == 4
    measured = [r for r in db.query("select * from results where status in ('ok', 'wrong')")]
    assert all(r["ffma"] and r["predicted_tflops"] for r in measured)  # counts and model on every row
    assert sorted(saved) == sorted(r["kernel"] for r in measured)  # once per measured kernel
    assert db["kernels"].count == len(measured)


def test_a_compile_that_fails_in_the_pool_is_a_compile_error_row(db, monkeypatch):
    import autotune.search.plan

    real_render = autotune.search.plan.render
    monkeypatch.setattr(autotune.search.plan, "render",
                        lambda config, limits=Limits(): real_render(config, limits) + "\n#error broken on purpose\n")
    result = run_search(db, CompilingGpu(0.0), [NAIVE], Limits(), sampler="random", trials=3, seed=9,
                        compile_jobs=2)
    assert result.new == 3 and result.statuses[COMPILE_ERROR] == 3
    rows = list(db.query("select status, reason from results where status != 'invalid'"))
    assert [r["status"] for r in rows] == [COMPILE_ERROR] * 3


# --------------------------------------------------------------------------- a pool kept across searches

def test_a_kept_pool_serves_several_searches_and_only_its_owner_closes_it(db):
    """autotune cover and the suite keep one pool for all their shapes (api.commands.Kept): a search given the
    pool uses it and leaves it open; its children are those of the first search."""
    warm_nvrtc()
    before = set(mp.active_children())
    compiler = Compiler(2)
    try:
        for shape in [(256, 256, 256), (128, 64, 32)]:
            backend = SlowGpu(0.2)
            backend.shape = shape
            result = run_search(db, backend, [NAIVE], Limits(), sampler="random", trials=3, seed=5, compiler=compiler)
            assert result.new == 3 and backend.cached_at_measure[1:] == [True] * 2
            children = set(mp.active_children()) - before
            if shape == (256, 256, 256):
                first = children
            assert children == first and children
    finally:
        compiler.close()
    assert set(mp.active_children()) <= before


def test_drop_pending_cancels_only_what_no_child_has_taken():
    compiler = Compiler(1)
    config = make_config(TILED, {})
    jobs = [BuildJob(f"k{i}", render(config).replace(config.name, f"k{i}"), "sm_90", False) for i in range(12)]
    try:
        works = [compiler.submit(job) for job in jobs]
        compiler.drop_pending()
        cancelled = [w for w in works if w.cancelled()]
        assert cancelled and not works[0].cancelled()  # the first was taken by the child
        again = compiler.submit(jobs[-1])
        assert again is not works[-1] and not again.cancelled()  # submitted anew, not the cancelled work
    finally:
        compiler.close()


def test_kept_starts_one_pool_for_gpu_workers_only_and_closes_it():
    from autotune.api.commands import Kept

    kept = Kept()
    assert kept.compiler_for([FakeBackend()], None) is None  # no NVRTC step to hide
    pool = kept.compiler_for([SlowGpu()], 1)
    assert pool is not None and kept.compiler_for([SlowGpu()], 1) is pool
    kept.close()
    assert kept.compiler is None and pool.submit(BuildJob("x", "", "sm_90", False)) is None  # closed
