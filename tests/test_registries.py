"""Contracts over every registered kind of thing: each sampler builds, each backend kind says what callers
branch on, each family declares the hooks the rest of the package asks it for. An unknown name is one line."""
from __future__ import annotations

import pytest
from optuna.samplers import BaseSampler

from autotune import store
from autotune.errors import AutotuneError
from autotune.families import NAIVE
from autotune.search.kinds import REGISTRY, SAMPLERS, sampler_kind
from autotune.search.loop import run_search
from autotune.search.samplers import make_sampler, missing
from autotune.space import Limits
from tests.fakes import FakeBackend


@pytest.mark.parametrize("name", SAMPLERS)
def test_every_registered_sampler_builds(name):
    kind = sampler_kind(name)
    assert kind.name == name and kind.doc
    if missing(name):
        pytest.skip(missing(name))
    assert isinstance(make_sampler(name, 0), BaseSampler)


def test_only_grid_enqueues_the_grid():
    assert [k.name for k in REGISTRY.values() if k.enqueues_grid] == ["grid"]


def test_an_unknown_sampler_is_one_line_listing_the_known_ones():
    with pytest.raises(AutotuneError) as exc:
        make_sampler("tpe_mv", 0)  # was quietly random search
    message = str(exc.value)
    assert "\n" not in message and "'tpe_mv'" in message and all(name in message for name in SAMPLERS)


def test_a_search_with_an_unknown_sampler_is_refused_before_it_starts(tmp_path):
    db = store.open_db(tmp_path / "x.sqlite")
    backend = FakeBackend()
    with pytest.raises(AutotuneError, match="unknown sampler 'bogus'"):
        run_search(db, backend, [NAIVE], Limits(), sampler="bogus", trials=2)
    assert backend.measured == []
