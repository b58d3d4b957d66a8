"""Shape-aware starts: what a search at a shape measures before its sampler proposes anything.

First the fastest verified config of each searched family that is valid here, at this shape in
another operand layout (a search of --layout NT after one of NN: the NN winner with TB=1; the
best tiling hardly depends on which operand is stored transposed), then at each of the
NEAREST_SHAPES recorded shapes nearest this one (store.nearest: same backend, same GPU model; the
distance rule is in space.shapes), nearest shape first and, within a shape, fastest first; at
most MAX_STARTS of them.
search.ranking puts them in turns with the family defaults the shape moved. A kernel's best tiling moves slowly with the shape, so
the neighbours' winners are the likeliest good kernels here, and measuring them first gives the
sampler a good region to look around from its first trial.

A neighbour's config is skipped, not an error, when a constraint refuses it at this shape (its
grid, say, exceeds a device limit here: its family's next fastest there takes its place), when
it lies outside a narrowed (-p) family (a layout's TA and TB excepted: they are set to the
searched layout's, and the parameters that follow them, layouts.FOLLOW_LAYOUT, to its defaults), or when this shape has a row for it already (the study
was told that row).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import sqlite_utils

from autotune import store
from autotune.backends.base import Backend
from autotune.backends.outcome import OK
from autotune.errors import SpaceError
from autotune.families import config_of_row
from autotune.families.layouts import FOLLOW_LAYOUT, TRANSPOSES
from autotune.search.plan import refusals
from autotune.space import Config, Family, Limits, Shape, make_config, shape_text, within

NEAREST_SHAPES = 3  # recorded shapes whose winners are measured first
MAX_STARTS = 8  # at most this many such configs: the rest of the budget is the sampler's


@dataclass
class Starts:
    configs: list[Config] = field(default_factory=list)
    shapes: list[Shape] = field(default_factory=list)  # the recorded shapes the configs come from, nearest first
    refused: int = 0  # neighbours' configs a constraint refuses at this shape
    measured: int = 0  # neighbours' configs this shape has a row for already

    def line(self) -> str:
        """Where the search starts, in one line for the log."""
        if not self.configs and not self.refused and not self.measured:
            return "autotune: no other shape recorded on this GPU model and backend; starting from the family defaults"
        skipped = [f"{n} {what}" for n, what in ((self.refused, "refused at this shape"),
                                                 (self.measured, "measured here already")) if n]
        note = f" ({', '.join(skipped)})" if skipped else ""
        where = f" recorded at {', '.join(map(shape_text, self.shapes))}" if self.shapes else ""
        n = len(self.configs)
        return f"autotune: starting from {n} config{'' if n == 1 else 's'}{where}{note}, then the family defaults"


def shape_starts(db: sqlite_utils.Database, backend: Backend, families: list[Family], limits: Limits,
                 measured: set[str], redo: store.Redo | None = None) -> Starts:
    """The neighbours' winners to measure first at the backend's shape (see the module doc); with
    `redo`, a winner here whose row is to be measured again (`--remeasure stale` after a template
    changed) as well."""
    gpu = backend.provenance["gpu_name"]
    searched = {f.name: f for f in families}
    starts, chosen, refused = Starts(), set(), set()
    for shape in [backend.shape, *store.nearest_shapes(db, backend.shape, backend.name, gpu, NEAREST_SHAPES)]:
        done: set[str] = set()  # families whose winner at this shape is found
        for row in sorted(store.results(db, shape, backend.name, gpu, OK), key=lambda r: r["time_ms"]):
            config = None if row["family"] in done else _as_searched(row, searched, backend.shape, limits)
            here = shape == backend.shape and config is not None and config.name == row["kernel"]
            if config is None or (here and not (redo and redo.redoes(row))):
                continue  # here, only other layouts' winners are news: the study was told this layout's rows
            if refusals(backend, config, limits):  # the family's next fastest there may do
                refused.add(config.name)
                continue
            done.add(row["family"])
            if config.name in chosen or len(starts.configs) >= MAX_STARTS:
                continue
            chosen.add(config.name)
            if config.name in measured:
                starts.measured += 1
                continue
            starts.configs.append(config)
            if shape not in starts.shapes:
                starts.shapes.append(shape)
    starts.refused = len(refused)
    return starts


def _as_searched(row: dict, searched: dict[str, Family], shape: Shape, limits: Limits) -> Config | None:
    """The row's config as a config of the searched (possibly narrowed) family at the searched shape;
    None when that family is not searched, the row is not a config of today's space, or lies outside
    the narrowing."""
    family = searched.get(row["family"])
    if family is None:
        return None
    try:
        values = dict(config_of_row(row).values)
    except SpaceError:
        return None
    moved = False
    for p in family.params:  # another layout's config, read as this layout's
        if p.name in TRANSPOSES and len(p.values) == 1 and values.get(p.name) != p.values[0]:
            values[p.name], moved = p.values[0], True
    if moved:  # the choices that follow the layout (blocked's PB, RT) are this layout's defaults at this shape
        given = {n: v for n, v in values.items() if n not in FOLLOW_LAYOUT}
        try:
            values = dict(make_config(family, given).values)
            if family.fit:
                fitted = {n: v for n, v in family.fit(values, shape, limits).items() if n in FOLLOW_LAYOUT}
                values = dict(make_config(family, {**given, **fitted}).values)
        except SpaceError:  # outside the narrowing
            return None
    if not within(family, values):
        return None
    return Config(family, tuple((p.name, values[p.name]) for p in family.params))
