"""A wasted proposal (measured already, or refused) makes the search enqueue a new valid config
next to it (search.fresh), so a sampler that keeps proposing what it has seen still yields new
measurements, without asking the sampler again."""
import random

import optuna
from optuna.samplers import BaseSampler

from autotune.families import BLOCKED, TILED
from autotune.search import samplers
from autotune.search.fresh import neighbour
from autotune.search.loop import run_search
from autotune.space import Limits, make_config, violations
from tests.fakes import FakeBackend


def differing(a, b) -> list[str]:
    return [name for name, value in a.params if b.values[name] != value]


def test_a_neighbour_differs_in_one_parameter_and_is_valid():
    start = make_config(BLOCKED, {})
    found = neighbour(start, lambda c: not violations(c), random.Random(0))
    assert found is not None and len(differing(found, start)) == 1 and not violations(found)


def test_two_parameters_change_when_no_single_change_is_usable():
    start = make_config(TILED, {})
    found = neighbour(start, lambda c: len(differing(c, start)) == 2, random.Random(0))
    assert found is not None and len(differing(found, start)) == 2


def test_no_neighbour_when_nothing_is_usable():
    assert neighbour(make_config(TILED, {}), lambda c: False, random.Random(0)) is None


class Stuck(BaseSampler):
    """Proposes the family's default config every time, as a converged sampler would; counts its calls."""

    calls = 0

    def infer_relative_search_space(self, study, trial):
        return {}

    def sample_relative(self, study, trial, search_space):
        return {}

    def sample_independent(self, study, trial, param_name, param_distribution):
        Stuck.calls += 1
        return TILED.name if param_name == "family" else make_config(TILED, {}).values[param_name]


def stuck_search(db, fresh: bool):
    Stuck.calls = 0
    with samplers.bind("stuck", lambda seed: Stuck()):
        return run_search(db, FakeBackend(), [TILED], Limits(), sampler="stuck", trials=6, seed=1, fresh=fresh)


def test_a_stuck_sampler_still_gives_new_measurements(db):
    result = stuck_search(db, fresh=True)
    assert result.new == 6
    per_proposal = 1 + len(TILED.params)  # the family, then each parameter
    assert Stuck.calls <= 6 * per_proposal  # one stuck proposal per new config, each answered by a neighbour
    kernels = [r["kernel"] for r in db.query("select kernel from results where status = 'ok'")]
    assert len(kernels) == len(set(kernels)) == 6


def test_without_fresh_configs_a_stuck_sampler_runs_into_the_budget(db):
    result = stuck_search(db, fresh=False)
    assert result.new == 1 and result.trials >= 50  # the default once, then reused until the budget


def test_an_enqueued_neighbour_is_not_itself_counted_as_met(db):
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    result = stuck_search(db, fresh=True)
    rows = list(db.query("select cached from trials"))
    assert sum(r["cached"] for r in rows) <= result.new  # one reused proposal per neighbour, no cascade
