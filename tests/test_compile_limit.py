"""A compile past the limit (codegen.nvrtc.COMPILE_LIMIT_S) is a recorded compile_error, never a
hang: the compile-ahead process gives up, the GPU worker does not compile that source again, and
the search's --timeout also bounds the wait for a compile ahead."""
import time
import uuid

import autotune.search.pipeline as pipeline
import autotune.search.plan
from autotune.backends.outcome import COMPILE_ERROR, Outcome
from autotune.codegen import nvrtc
from autotune.codegen.render import render
from autotune.families import NAIVE
from autotune.search.loop import run_search
from autotune.space import Limits, make_config
from tests.fakes import FakeBackend


def unique_source() -> str:
    """A naive kernel's source no other test has compiled (so never a cache hit)."""
    config = make_config(NAIVE, {})
    return render(config) + f"\n// {uuid.uuid4()}\n"


def test_a_compile_past_the_limit_fails_with_its_reason_and_is_not_tried_again(monkeypatch):
    calls = []

    def slow_nvrtc(source, name, arch):
        calls.append(name)
        time.sleep(1.0)
        return b"never used"

    monkeypatch.setattr(nvrtc, "_nvrtc", slow_nvrtc)
    monkeypatch.setenv("AUTOTUNE_COMPILE_LIMIT_S", "0.2")
    source = unique_source()
    start = time.perf_counter()
    built = nvrtc.compile_source(source, "k")
    assert time.perf_counter() - start < 0.9  # it did not wait for NVRTC
    assert not built.ok and built.timed_out and built.log == "NVRTC took longer than 0.2 s"
    again = nvrtc.compile_source(source, "k")
    assert not again.ok and again.log == built.log and calls == ["k"]  # given up on: not compiled again
    monkeypatch.setenv("AUTOTUNE_COMPILE_LIMIT_S", "5")  # a longer limit tries again
    assert nvrtc.compile_source(source, "k").ok and calls == ["k", "k"]


class NvrtcGpu(FakeBackend):
    """Compiles what it measures, as the GPU worker does, and records NVRTC's reason."""
    compile_ahead = True

    def measure(self, config, source):
        built = nvrtc.compile_source(source, config.name, "sm_90")
        if not built.ok:
            return Outcome(COMPILE_ERROR, reason=built.log)
        return super().measure(config, source)


def test_a_compile_the_pool_gives_up_on_is_a_compile_error_row_not_compiled_again(db, monkeypatch):
    real_render = autotune.search.plan.render
    run = uuid.uuid4()
    monkeypatch.setattr(autotune.search.plan, "render",
                        lambda config, limits=Limits(): real_render(config, limits) + f"\n// {run}\n")
    monkeypatch.setenv("AUTOTUNE_COMPILE_LIMIT_S", "0.001")  # the pool processes inherit it: NVRTC takes longer

    def no_compile_on_the_gpu_loop(*args):
        raise AssertionError("the GPU worker compiled a source the compile-ahead process had given up on")

    monkeypatch.setattr(nvrtc, "_nvrtc", no_compile_on_the_gpu_loop)
    # one trial: the jobs queued behind a process that gives up fail with it, and the GPU worker compiles those
    result = run_search(db, NvrtcGpu(), [NAIVE], Limits(), sampler="random", trials=1, seed=9, compile_jobs=1)
    assert result.new == 1
    rows = list(db.query("select status, reason from results where status != 'invalid'"))
    assert rows == [{"status": COMPILE_ERROR, "reason": "NVRTC took longer than 0.001 s"}]


class NeverBuilt:
    """A compile-ahead pool whose jobs never end (a compile that takes minutes)."""

    def __init__(self, jobs: int):
        self.jobs = jobs

    def submit(self, job):
        return pipeline.Future()

    def close(self):
        pass


def test_the_search_timeout_bounds_the_wait_for_a_compile_ahead(db, monkeypatch):
    monkeypatch.setattr(pipeline, "Compiler", NeverBuilt)
    monkeypatch.setattr(pipeline, "WAIT_S", 4.0)
    start = time.monotonic()
    result = run_search(db, NvrtcGpu(), [NAIVE], Limits(), sampler="random", trials=5, seed=3, timeout=0.3,
                        compile_jobs=1)
    assert time.monotonic() - start < 3.5  # not WAIT_S: the trial in flight stopped waiting at the deadline
    assert result.new == 0 and result.skipped >= 1
    assert not db["results"].exists() or db["results"].count == 0  # nothing compiled nor measured after it


def test_a_pool_whose_process_died_still_closes():
    import os
    import signal
    import threading

    compiler = pipeline.Compiler(2)
    pipeline.ready(compiler.submit(pipeline.BuildJob("x", "int x;", "sm_90", False)), 20)
    os.kill(next(iter(compiler._pool._processes)), signal.SIGKILL)  # a crash: the pool ends the other one too
    closing = threading.Thread(target=compiler.close, daemon=True)
    closing.start()
    closing.join(10)
    assert not closing.is_alive()  # close() returned: no wait on a dead process
