"""What a search or a first-use job measures first at a shape, and the seam that orders it.

candidates(): the nearest recorded shapes' winners (search.starts.shape_starts: this shape's other
layouts first, then the nearest shapes, fastest first within each, at most MAX_STARTS) taking turns
with the defaults of the families whose fit moved them here (fits()), then the other defaults; those
a constraint refuses at the shape, and those measured here already, left out. The turns are there
because a small budget is spent on the head of the list: at the 40 random shapes of
benchmarks/anyshape.py (seed 1), `autotune cover` with 8 trials a shape measured the neighbours'
8 winners and nothing else, so no skinny or tall kernel was tried at 1x689x7472 or 3712x3x1235,
the GEMV-like shapes those families are for (benchmarks/data/anyshape-covered-neighbours-first-h200.json;
with the turns, 12 trials a shape: anyshape-covered-h200.json).

A Ranker orders them (make_ranker: the time model where enough rows teach it, else as found); the
search enqueues that order as its first trials (search.loop), a first-use job measures its head
within its budget (api.firstuse.job).
"""
from __future__ import annotations

import itertools
from typing import Protocol

import sqlite_utils

from autotune import store
from autotune.backends.base import Backend
from autotune.backends.outcome import OK
from autotune.errors import AutotuneError
from autotune.explain.timemodel import TimeModel
from autotune.families import DEFAULT_ORDER, FAMILIES
from autotune.search.plan import refusals
from autotune.search.starts import Starts, shape_starts
from autotune.space import Config, Family, Limits, Shape, fitted, make_config, within


class Ranker(Protocol):
    def rank(self, configs: list[Config], shape: Shape) -> list[Config]:
        """The configs likeliest to be fastest at `shape` first. Only configs given may come back (some
        may be left out: those it expects to lose); the caller measures the head of the list. Called once
        per shape, before anything is measured there."""


class AsFound:
    """The candidates' own order (candidates(): the neighbours' winners and the fits that moved in turn)."""

    def rank(self, configs: list[Config], shape: Shape) -> list[Config]:
        return list(configs)


class ByTimeModel:
    """The time model's order (explain.timemodel): predicted fastest first. Held out one shape at a time on
    the H200 suite, the best of its first five was 1.07x the best measured (geometric mean), the nearest
    shape's order 1.20x; at 108 host-bound shapes of other databases, 1.00-1.02x (docs/time-model.md)."""

    def __init__(self, model: TimeModel):
        self.model = model

    def rank(self, configs: list[Config], shape: Shape) -> list[Config]:
        return [config for config, _ in self.model.rank(configs, shape)]


# Fewer verified rows than this, or rows at fewer shapes, teach the model too little to overrule the
# neighbours' order (its leave-one-shape-out figures are from 2,995 rows at 28 shapes).
MIN_ROWS, MIN_SHAPES = 200, 8
# A fit costs 0.2 s at 200 rows and 1.2 s at 3,000 (its trees), and a cover ranks at each product while
# adding a dozen rows a product: a model is fitted again once the rows have grown by a tenth.
REFIT_SHARE = 10  # 1 / the growth
_fitted: dict[tuple, tuple[int, TimeModel]] = {}  # (database, backend, GPU model, limits) -> (rows, the model)


def make_ranker(db: sqlite_utils.Database, backend: Backend, limits: Limits) -> Ranker:
    """The time model fitted on the verified rows of this backend and GPU model in `db`, the shipped
    databases and, on the GPU, the model's shipped rows (store.shipped_model_rows), with these limits;
    AsFound where they are too few (MIN_ROWS, MIN_SHAPES)."""
    gpu = backend.provenance.get("gpu_name")
    shipped = [store.open_readonly(p) for p in store.shipped_databases()]
    try:
        rows = [r for d in [db, *shipped]
                for r in d.query("SELECT * FROM results WHERE backend = ? AND gpu_name = ? AND status = ?",
                                 [backend.name, gpu, OK])]
    finally:
        for d in shipped:  # a search calls this once per shape, and a cover runs a search per product
            d.close()
    if backend.name == "cuda" and gpu:  # measured on the GPU: not what the emulator or a replay times
        rows += store.shipped_model_rows(gpu)
    if len(rows) < MIN_ROWS or len({(r["M"], r["N"], r["K"]) for r in rows}) < MIN_SHAPES:
        return AsFound()
    key = (store.path_of(db), backend.name, gpu, limits)
    seen, model = _fitted.get(key, (0, None))
    if model is None or not 0 <= len(rows) - seen < seen // REFIT_SHARE:
        try:
            model = TimeModel.fit(rows, limits)
        except AutotuneError:  # nothing the model can read (families this version does not know)
            return AsFound()
        _fitted[key] = (len(rows), model)
    return ByTimeModel(model)


def candidates(db: sqlite_utils.Database, backend: Backend, families: list[Family], limits: Limits,
               measured: set[str], starts: Starts | None = None) -> list[Config]:
    """What the module's docstring says, at the backend's shape; `measured`: the kernels with a row here;
    `starts`: the neighbours' winners where the caller found them already (shape_starts)."""
    if starts is None:
        starts = shape_starts(db, backend, families, limits, measured)
    moved, others = fits(families, backend.shape, limits)
    turns = [c for pair in itertools.zip_longest(starts.configs, moved) for c in pair if c is not None]
    found: dict[str, Config] = {}
    for config in turns + others:
        if within(config.family, config.values) and not refusals(backend, config, limits) and \
                config.name not in measured:
            found.setdefault(config.name, config)
    return list(found.values())


def fits(families: list[Family], shape: Shape, limits: Limits) -> tuple[list[Config], list[Config]]:
    """Each family's default fitted to the shape, and its plain default, in the dispatcher's order of
    defaults (blocked first): (the fits that moved the default here, everything else). A fit that moved
    (split-K's splits at a deep K, skinny's rows at a few) says the shape is of the kind its family is for."""
    ordered = sorted(families, key=lambda f: DEFAULT_ORDER.index(f.name) if f.name in DEFAULT_ORDER else len(FAMILIES))
    moved: list[Config] = []
    others: list[Config] = []
    for family in ordered:
        # a parameter narrowed to one value (-p BN=128, a layout's TA and TB) is the caller's: the fit keeps it
        fixed = {p.name: p.values[0] for p in family.params if len(p.values) == 1}
        default = make_config(family, fixed)  # in a family narrowed to a layout: that layout's default
        fit = fitted(default, shape, limits, fixed)
        (moved if fit.name != default.name else others).append(fit)
        others.append(default)
    return moved, others
