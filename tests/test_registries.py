"""Contracts over every registered kind of thing: each sampler builds, each backend kind says what callers
branch on, each family declares the hooks the rest of the package asks it for. An unknown name is one line."""
from __future__ import annotations

import ast
from dataclasses import replace
from pathlib import Path

import pytest
from optuna.samplers import BaseSampler

import autotune
from autotune import store
from autotune.backends.kinds import BACKENDS, backend_kind
from autotune.backends.pool import worker_specs
from autotune.cli import cli
from autotune.codegen.hip import refusal
from autotune.errors import AutotuneError
from autotune.explain.banks import BANK_MODELS
from autotune.explain.model import intensity
from autotune.families import FAMILIES, NAIVE, PRECISIONS
from autotune.search.kinds import REGISTRY, SAMPLERS, sampler_kind
from autotune.search.loop import run_search
from autotune.search.samplers import make_sampler, missing
from autotune.space import Limits, make_config
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


# --------------------------------------------------------------------------- families

@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_every_family_declares_what_the_package_asks_it(name):
    family = FAMILIES[name]
    assert family.precision in PRECISIONS
    assert family.hip is not None, f"{name}: say whether its kernels need 32-lane waves (Family.hip)"
    assert family.intensity is not None, f"{name}: give the ceiling model its DRAM traffic (Family.intensity)"
    assert family.bank_model is None or family.bank_model in BANK_MODELS
    assert family.block_tile is not None, f"{name}: give the time model its block's tile (Family.block_tile)"
    config = make_config(family, {})
    assert intensity(config) > 0  # the hook reads only parameters the family has
    rows, cols = family.block_tile(config.values)
    assert rows >= 1 and cols >= 1


def test_a_family_that_declares_nothing_is_refused_not_passed_over():
    silent = make_config(replace(NAIVE, hip=None, intensity=None), {})
    with pytest.raises(AutotuneError, match="no traffic model for family naive"):
        intensity(silent)
    why = refusal(silent, silent.name, "__global__ void k() {}", silent.geometry(64, 64))
    assert why and "declares no HIP support" in why and "\n" not in why


def family_literals(path: Path) -> list[str]:
    """The string literals in a module that are exactly a family's name, with their lines."""
    tree = ast.parse(path.read_text(), str(path))
    return [f"{path}:{node.lineno}: {node.value!r}" for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in FAMILIES]


def test_no_family_name_outside_its_module():
    # Callers ask the family (Family.hip, .intensity, .precision, ...), not its name: a new family then
    # gets its own answers or a clear refusal, never another family's branch or none at all.
    package = Path(autotune.__file__).parent
    found = [hit for path in sorted(package.rglob("*.py")) if "families" not in path.relative_to(package).parts
             for hit in family_literals(path)]
    assert found == [], "\n".join(found)


# --------------------------------------------------------------------------- backends

@pytest.mark.parametrize("name", BACKENDS)
def test_every_registered_backend_says_what_it_is(name):
    kind = backend_kind(name)
    assert kind.name == name and kind.doc and callable(kind.build)
    assert [kind.on_gpus, kind.emulated, kind.replays].count(True) == 1  # callers branch on exactly one of these


def test_the_command_line_offers_every_registered_backend():
    offered = next(p for p in cli.commands["search"].params if p.name == "backend")
    assert tuple(offered.type.choices) == BACKENDS


def test_an_unknown_backend_is_one_line_listing_the_known_ones():
    with pytest.raises(AutotuneError) as exc:
        worker_specs("simulator", (8, 8, 8), 0, None, None, None)
    message = str(exc.value)
    assert "\n" not in message and "'simulator'" in message and all(name in message for name in BACKENDS)
