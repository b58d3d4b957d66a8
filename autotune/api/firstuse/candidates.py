"""The candidates a first-use job measures at a shape, and the seam that ranks them.

candidates(): the nearest recorded shapes' winners (search.starts.shape_starts: this shape's other
layouts first, then the nearest shapes, fastest first within each, at most MAX_STARTS), then each
family's default fitted to the shape (Family.fit) and the plain default, as a search's first trials
are (fits() says in which order); those a constraint refuses at the shape, and those measured here already, left out. A Ranker
orders them; the job measures the head of that order within its budget.
"""
from __future__ import annotations

from typing import Protocol

import sqlite_utils

from autotune.api.dispatch import DEFAULT_ORDER
from autotune.backends.base import Backend
from autotune.families import FAMILIES
from autotune.search.plan import refusals
from autotune.search.starts import shape_starts
from autotune.space import Config, Family, Limits, Shape, fitted, make_config, within


class Ranker(Protocol):
    def rank(self, configs: list[Config], shape: Shape) -> list[Config]:
        """The configs likeliest to be fastest at `shape` first. Only configs given may come back (some
        may be left out: those it expects to lose); the job measures the head of the list. Called once
        per tuned shape, in the job's process, before anything is measured there."""


class AsFound:
    """Today's ranking: the candidates' own order (neighbours' winners, nearest shape first, then the fits)."""

    def rank(self, configs: list[Config], shape: Shape) -> list[Config]:
        return list(configs)


def make_ranker(db: sqlite_utils.Database, backend: Backend, limits: Limits) -> Ranker:
    """The ranker a job uses. The time model plugs in here (explain.timemodel: TimeModel.fit on the rows
    of `db` for this backend and GPU model, with these limits), in place of AsFound."""
    return AsFound()


def candidates(db: sqlite_utils.Database, backend: Backend, families: list[Family], limits: Limits,
               measured: set[str]) -> list[Config]:
    """What the module's docstring says, at the backend's shape; `measured`: the kernels with a row here."""
    starts = shape_starts(db, backend, families, limits, measured)
    found = {c.name: c for c in starts.configs}
    for config in fits(families, backend.shape, limits):
        if within(config.family, config.values) and not refusals(backend, config, limits) and \
                config.name not in measured:
            found.setdefault(config.name, config)
    return list(found.values())


def fits(families: list[Family], shape: Shape, limits: Limits) -> list[Config]:
    """Each family's default fitted to the shape, then its plain default. First the families whose fit
    moved the default here (split-K's splits at a deep K, skinny's rows at a few): the fit says the
    shape is of the kind the family is for; then in the dispatcher's order of defaults (blocked first)."""
    ordered = sorted(families, key=lambda f: DEFAULT_ORDER.index(f.name) if f.name in DEFAULT_ORDER else len(FAMILIES))
    moved: list[Config] = []
    others: list[Config] = []
    for family in ordered:
        default = make_config(family, {})  # in a family narrowed to a layout: that layout's default
        fit = fitted(default, shape, limits)
        (moved if fit.name != default.name else others).append(fit)
        others.append(default)
    return moved + others
