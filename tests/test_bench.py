"""The sampler benchmark on small replayed datasets: the tally against ground truth, the
same seed giving the same run, partial datasets searched within what they recorded, and
the model-guided sampler following its ceilings."""
import zlib

import pytest

from autotune import store
from autotune.backends.outcome import OK, UNRECORDED, Outcome, Timing
from autotune.backends.replay import OVERHEAD_S
from autotune.families import NAIVE
from autotune.search import bench, samplers
from autotune.search.loop import run_search
from autotune.space import Limits, valid_configs
from tests.fakes import FakeBackend

SHAPE = (256, 256, 256)


def jitter_ms(config) -> float:
    """One clear best among the naive configs (the plain fake ties half of them)."""
    return 20.0 + zlib.crc32(config.name.encode()) % 1000 / 10.0


class JitterBackend(FakeBackend):
    def measure(self, config, source):
        self.measured.append(config.name)
        ms = jitter_ms(config)
        return Outcome(OK, err=1e-7, timing=Timing(ms, ms, ms, 5))


def record(path, trials: int, sampler: str = "grid"):
    db = store.open_db(path)
    run_search(db, JitterBackend(*SHAPE), [NAIVE], Limits(), sampler=sampler, trials=trials, seed=3)
    db.close()
    return path


@pytest.fixture
def full(tmp_path):
    return bench.load_dataset(record(tmp_path / "full.sqlite", 1000), SHAPE, [NAIVE], "full")


@pytest.fixture
def partial(tmp_path):
    return bench.load_dataset(record(tmp_path / "part.sqlite", 40, "random"), SHAPE, [NAIVE], "part")


def test_an_exhaustive_dataset_and_its_best(full):
    assert full.exhaustive and len(full.space) == len(valid_configs(NAIVE))
    assert full.best["time_ms"] == min(jitter_ms(c) for c in valid_configs(NAIVE))


def test_grid_reaches_the_target_where_declaration_order_says(full):
    run = bench.run_one(full, "grid", seed=0)
    limit = full.best["time_ms"] / 0.98
    first = next(i for i, c in enumerate(valid_configs(NAIVE), 1) if jitter_ms(c) <= limit)
    assert run.new[0.02] == first
    assert run.seconds[0.02] > first * OVERHEAD_S  # at least the per-trial overhead each


@pytest.mark.parametrize("sampler", ["random", "tpe"])
def test_same_seed_same_run(full, sampler):
    a, b = bench.run_one(full, sampler, seed=5), bench.run_one(full, sampler, seed=5)
    assert (a.new, a.seconds) == (b.new, b.seconds)
    assert a.new[0.05] <= a.new[0.02] <= len(full.space)


def test_a_partial_dataset_is_searched_within_what_it_recorded(partial, tmp_path):
    assert not partial.exhaustive and 0 < len(partial.recorded) < len(partial.valid)
    from autotune.backends.replay import ReplayBackend
    from autotune.search.samplers import make_sampler

    db = store.open_db(tmp_path / "run.sqlite")
    factory = lambda seed: samplers.Restricted(make_sampler("tpe", seed), partial.space, seed)  # noqa: E731
    with samplers.bind("bench-tpe", factory):
        run_search(db, ReplayBackend(partial.path, SHAPE), [NAIVE], Limits(), sampler="bench-tpe",
                   trials=len(partial.space), seed=1)
    statuses = {r["status"] for r in db.query("select status from results")}
    assert UNRECORDED not in statuses
    assert db["results"].count_where("status = 'ok'") == len(partial.space)  # all of them, each once
    order = [samplers.RandomOrder(partial.space, [NAIVE], seed)._params for seed in (0, 1)]
    assert order[0] != order[1] and sorted(map(str, order[0])) == sorted(map(str, order[1]))  # a permutation
    run = bench.run_one(partial, "grid", seed=0)
    assert run.new[0.02] is not None and run.new[0.02] <= len(partial.space)
    assert "NOT exhaustive" in bench.table(partial, {"grid": [run]}, {})


def test_model_sampler_follows_its_ceilings_and_prunes(full):
    perfect = {c.name: 1000.0 / jitter_ms(c) for c in full.valid}  # a model that ranks exactly
    run = bench.run_one(full, "model", seed=0, ceilings=perfect)
    assert run.new[0.02] == 1
    inverted = {name: -value + 100 for name, value in perfect.items()}  # ranks the best last
    run = bench.run_one(full, "model", seed=0, ceilings=inverted)
    assert run.new[0.02] is None or run.new[0.02] > len(full.space) // 2


def test_the_table_has_a_row_per_sampler_and_the_reasons_for_skips(full):
    runs, skipped = bench.bench(full, ["random", "grid", "cmaes"], seeds=[0, 1])
    text = bench.table(full, runs, skipped)
    assert "| random |" in text and "| grid |" in text and "1.00x" in text
    assert "cmaes" in skipped and "categorical" in text
    assert "exhaustive" in text and str(len(full.space)) in text


def test_forked_runs_and_the_json_summary_match_the_table(full):
    runs, skipped = bench.bench(full, ["random", "tpe-mv", "cmaes"], seeds=[0, 1, 2])
    forked, _ = bench.bench(full, ["random", "tpe-mv", "cmaes"], seeds=[0, 1, 2], jobs=2)
    assert {n: [r.new for r in rs] for n, rs in forked.items()} == {n: [r.new for r in rs] for n, rs in runs.items()}
    out = bench.summary(full, runs, skipped)
    tpe = out["samplers"]["tpe-mv"]
    assert tpe["per_seed_trials_to_2pct"] == [r.new[0.02] for r in runs["tpe-mv"]] and tpe["seeds"] == [0, 1, 2]
    t2 = tpe["trials_to_2pct"]
    assert t2["min"] <= t2["q1"] <= t2["median"] <= t2["q3"] <= t2["max"]
    row = next(ln for ln in bench.table(full, runs, skipped).splitlines() if ln.startswith("| tpe-mv |"))
    assert f"| {t2['median']:.0f} [{t2['q1']:.0f}-{t2['q3']:.0f}] |" in row
    assert out["samplers"]["random"]["vs_random_2pct"] == 1.0 and "cmaes" in out["skipped"]
    assert out["space"] == len(full.space) and out["exhaustive"]


def test_cli_offers_every_sampler_the_search_builds():
    from autotune.cli import cli
    from autotune.search import SAMPLERS
    from autotune.search.samplers import make_sampler

    offered = next(p for p in cli.commands["search"].params if p.name == "sampler")
    assert tuple(offered.type.choices) == SAMPLERS
    for name in ("tpe", "random", "tpe-mv", "qmc"):
        assert make_sampler(name, 0) is not None


@pytest.mark.parametrize("sampler, module", [("qmc", "scipy"), ("gp", "scipy"), ("gp", "torch")])
def test_a_sampler_whose_module_is_missing_is_skipped(sampler, module, monkeypatch):
    # QMCSampler imports scipy only when it samples: the benchmark died mid-run without it.
    monkeypatch.setitem(__import__("sys").modules, module, None)  # hidden, whether installed or not
    reason = bench.skip_reason(sampler, None, None)
    assert reason and reason.startswith("skipped:") and module in reason, reason
    assert samplers.missing("tpe-mv") is None and bench.skip_reason("random", None, None) is None
