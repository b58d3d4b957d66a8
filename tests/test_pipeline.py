"""Compile ahead (autotune/pipeline.py): while one trial measures, the next one's cubin is built
into the cache, and no trial asked ahead is left running when the search ends."""
import time

from optuna.trial import TrialState

from autotune.compile import cache_dir, cache_key
from autotune.families import NAIVE
from autotune.search import run_search
from autotune.space import Limits
from tests.fakes import FakeBackend


class SlowGpu(FakeBackend):
    """Measures take a while, as on a GPU; records whether each cubin was already built."""
    compile_ahead = True
    explain = False

    def __init__(self):
        super().__init__()
        self.cached_at_measure: list[bool] = []

    def measure(self, config, source):
        self.cached_at_measure.append((cache_dir() / f"{cache_key(source, 'sm_90')}.cubin").exists())
        time.sleep(2.0)  # a naive kernel compiles in well under 0.5 s
        return super().measure(config, source)


def test_the_next_trial_is_compiled_while_this_one_measures(db):
    from autotune.codegen import render
    from autotune.compile import compile_source
    from autotune.space import make_config

    warm = make_config(NAIVE, {"bx": 1024, "by": 1})
    compile_source(render(warm), warm.name)  # load NVRTC first: its first call takes seconds
    backend = SlowGpu()
    result = run_search(db, backend, [NAIVE], Limits(), sampler="random", trials=4, seed=5)
    assert result.new == 4
    # the first trial had nothing before it; every later one found its cubin built ahead
    assert backend.cached_at_measure[1:] == [True] * (len(backend.cached_at_measure) - 1)


def test_no_trial_is_left_running(db):
    import optuna

    backend = SlowGpu()
    captured = {}
    real = optuna.create_study

    def spy(*args, **kwargs):
        captured["study"] = real(*args, **kwargs)
        return captured["study"]

    optuna.create_study, saved = spy, optuna.create_study
    try:
        run_search(db, backend, [NAIVE], Limits(), sampler="random", trials=2, seed=6)
    finally:
        optuna.create_study = saved
    states = {t.state for t in captured["study"].trials}
    assert TrialState.RUNNING not in states and TrialState.PRUNED in states  # the one asked ahead
