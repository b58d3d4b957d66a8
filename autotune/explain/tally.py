"""What the searches in a database did, read from their rows: the shapes searched, each family's
tally by status with its best row, and the trials in order with the steps where the best improved.

Everything is read; nothing is modelled or compiled here (report.py adds the ceilings).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import sqlite_utils

from autotune.backends.outcome import OK, STATUSES

Shape = tuple[int, int, int]
Dims = tuple[int | None, int | None, int | None]  # M, N, K to match; None: any
RECORDED = "rows in recorded order"  # the study name of a database without trials (`autotune measure` rows)


@dataclass(frozen=True)
class Searched:
    """One shape of one backend that has rows: what the report gets a section for."""

    backend: str
    shape: Shape
    rows: int

    @property
    def label(self) -> str:
        return "x".join(map(str, self.shape))


def searched(db: sqlite_utils.Database, dims: Dims, gpu: str | None = None) -> list[Searched]:
    """The (backend, shape)s with rows, each of dims (M, N, K) that is given matching."""
    where: list[str] = []
    args: list[int | str] = []
    for name, value in zip("MNK", dims):
        if value is not None:
            where.append(f"{name} = ?")
            args.append(value)
    if gpu:
        where.append("(gpu_uuid = ? OR gpu_name = ?)")
        args += [gpu, gpu]
    sql = ("SELECT backend, M, N, K, COUNT(*) AS n FROM results" + (" WHERE " + " AND ".join(where) if where else "")
           + " GROUP BY backend, M, N, K ORDER BY backend, M, N, K")
    return [Searched(r["backend"], (r["M"], r["N"], r["K"]), r["n"]) for r in db.query(sql, args)]


@dataclass
class FamilyTally:
    """One family at one shape: how many of its configs ended in each status, and its fastest verified row."""

    family: str
    statuses: dict[str, int] = field(default_factory=dict)
    best: dict[str, Any] | None = None

    @property
    def total(self) -> int:
        return sum(self.statuses.values())


def tallies(rows: list[dict[str, Any]]) -> list[FamilyTally]:
    """Per family, in the order the search first measured it."""
    out: dict[str, FamilyTally] = {}
    for r in rows:
        t = out.setdefault(r["family"], FamilyTally(r["family"]))
        t.statuses[r["status"]] = t.statuses.get(r["status"], 0) + 1
        if r["status"] == OK and (t.best is None or r["time_ms"] < t.best["time_ms"]):
            t.best = r
    return list(out.values())


def statuses_seen(families: list[FamilyTally]) -> list[str]:
    """The statuses that occur, known ones in their usual order, then any other."""
    seen = {s for t in families for s in t.statuses}
    return [s for s in STATUSES if s in seen] + sorted(seen - set(STATUSES))


def trial_rows(db: sqlite_utils.Database, backend: str, shape: Shape, gpu: str | None = None) -> list[dict[str, Any]]:
    """Each trial at the shape with its result (study, number, status, kernel, time_ms, tflops, id), by
    study and number. A database without trials (rows of `autotune measure`) gives its rows in the
    order they were recorded, numbered from 0, as one study."""
    gpu_sql = " AND (r.gpu_uuid = ? OR r.gpu_name = ?)" if gpu else ""
    args = [backend, *shape, *([gpu, gpu] if gpu else [])]
    if "trials" in db.table_names():
        rows = list(db.query(
            "SELECT t.study, t.number, r.status, r.kernel, r.time_ms, r.tflops, r.id FROM trials t "
            "JOIN results r ON r.id = t.result_id WHERE r.backend = ? AND r.M = ? AND r.N = ? AND r.K = ?"
            + gpu_sql + " ORDER BY t.study, t.number", args))
        if rows:
            return rows
    recorded = db.query("SELECT r.status, r.kernel, r.time_ms, r.tflops, r.id FROM results r WHERE r.backend = ? "
                        "AND r.M = ? AND r.N = ? AND r.K = ?" + gpu_sql + " ORDER BY r.id", args)
    return [{"study": RECORDED, "number": i, **r} for i, r in enumerate(recorded)]


def progress(trials: list[dict[str, Any]]) -> dict[str, list[tuple[int, float]]]:
    """Per study: (trial number, TFLOP/s of that trial; 0 for anything not verified)."""
    out: dict[str, list[tuple[int, float]]] = {}
    for r in trials:
        out.setdefault(r["study"], []).append((r["number"], r["tflops"] if r["status"] == OK else 0.0))
    return out


@dataclass(frozen=True)
class Step:
    """A trial that beat every earlier verified trial of its study: when the best was found."""

    study: str
    number: int
    kernel: str
    time_ms: float
    tflops: float
    result_id: int


def improvements(trials: list[dict[str, Any]]) -> list[Step]:
    """The trials at which each study's best time dropped (a cached trial repeats a time: not a step)."""
    out: list[Step] = []
    best: dict[str, float] = {}
    for r in trials:
        if r["status"] != OK or r["time_ms"] >= best.get(r["study"], float("inf")):
            continue
        best[r["study"]] = r["time_ms"]
        out.append(Step(r["study"], r["number"], r["kernel"], r["time_ms"], r["tflops"], r["id"]))
    return out
