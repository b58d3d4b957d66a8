"""Which kernel computes a call: per GPU model, shape and layout, decided once per process.

The rule, in order:
1. exact: the fastest verified row of the backend on this GPU model at this very shape;
2. nearest: else the fastest row, valid at this shape, of the nearest recorded shape
   (api.export.nearest_best: the distance of space.shapes, the smaller shape on a tie);
3. default: else the default config of the first family (in FAMILIES order, `blocked` first
   among those that take any shape) that a constraint does not refuse at this shape.
Only kernels of the call's transposes count: a row's TA and TB (absent: 0) must be the layout's
trans_a and trans_b, and a default takes them as parameters (families without them: NN only).
The source is the one that was measured (stored with the row), today's render where the row
has none stored, so the kernel that runs is the kernel that was timed.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass

from autotune import store
from autotune.api.export import nearest_best
from autotune.api.operands import Layout
from autotune.backends.outcome import OK
from autotune.codegen.render import render, sha256
from autotune.errors import AutotuneError
from autotune.families import FAMILIES, config_of_row
from autotune.space import Config, Shape, make_config, shape_text, shape_violations, violations

DEFAULT_ORDER = ("blocked", *FAMILIES)  # the family defaults tried when nothing is recorded


@dataclass(frozen=True)
class Choice:
    """The kernel chosen for one (GPU model, shape, layout): what to load and how it was chosen."""

    config: Config
    kernel: str  # its name in `source`
    source: str
    source_hash: str
    origin: str  # "exact", "nearest" or "default"
    measured_at: Shape | None  # the shape its recorded time is from (None: the default, never timed here)
    row_id: int | None

    def describe(self) -> str:
        if self.origin == "default":
            return f"{self.kernel} (the {self.config.family.name} family's default: nothing recorded for this GPU)"
        assert self.measured_at is not None
        return f"{self.kernel} ({self.origin}: result {self.row_id}, measured at {shape_text(self.measured_at)})"


class Dispatcher:
    """Decides per (GPU model, shape, layout) from a results database (None: family defaults
    only) and remembers each decision. gpu: the GPU name or UUID whose rows count (None: the
    model of the device each call runs on)."""

    def __init__(self, db_path: str | None, backend: str = "cuda", gpu: str | None = None):
        self.db_path, self.backend, self.gpu = db_path, backend, gpu
        self._db = store.open_readonly(db_path) if db_path is not None else None
        self._chosen: dict[tuple[str, Shape, Layout], Choice] = {}
        self._lock = threading.Lock()  # one reader of the database at a time

    def choose(self, gpu_name: str, shape: Shape, layout: Layout) -> Choice:
        key = (self.gpu or gpu_name, shape, layout)
        choice = self._chosen.get(key)
        if choice is None:
            with self._lock:
                choice = self._chosen[key] = self._decide(key[0], shape, layout)
        return choice

    def _decide(self, gpu: str, shape: Shape, layout: Layout) -> Choice:
        wanted = transposes(layout)
        if self._db is not None:
            rows = [r for r in store.results(self._db, shape, self.backend, gpu, OK) if _transposes(r) == wanted]
            row = min(rows, key=lambda r: r["time_ms"]) if rows else None
            origin = "exact"
            if row is None:
                row, origin = nearest_best(self._db, shape, self.backend, gpu, None, wanted), "nearest"
            if row is not None:
                return self._of_row(row, origin)
        return default_choice(shape, layout)

    def _of_row(self, row: dict, origin: str) -> Choice:
        config = config_of_row(row)
        assert self._db is not None
        source = store.source(self._db, row["source_hash"])
        kernel = row["kernel"]
        if source is None:  # a dataset recorded without sources: today's render, under today's name
            source, kernel = render(config), config.name
        return Choice(config, kernel, source, sha256(source), origin, (row["M"], row["N"], row["K"]), row["id"])


def transposes(layout: Layout) -> dict[str, int]:
    """The kernel parameters of a layout's transposes, and BLAS=0: the launcher passes the plain
    (A, B, C, M, N, K), so a BLAS=1 kernel (cuBLAS-style arguments) is never chosen."""
    return {"TA": int(layout.trans_a), "TB": int(layout.trans_b), "BLAS": 0}


def _transposes(row: dict) -> dict[str, int]:
    # absent (an older row): not transposed, the plain signature
    return {"TA": row.get("TA") or 0, "TB": row.get("TB") or 0, "BLAS": row.get("BLAS") or 0}


def default_choice(shape: Shape, layout: Layout | None = None) -> Choice:
    M, N, _ = shape
    given = {k: v for k, v in transposes(layout).items() if v} if layout is not None else {}
    for name in DEFAULT_ORDER:
        family = FAMILIES[name]
        if any(p not in {q.name for q in family.params} for p in given):
            continue  # a family without these transposes
        config = make_config(family, given)
        if not violations(config) and not shape_violations(config, M, N):
            source = render(config)
            return Choice(config, config.name, source, sha256(source), "default", None, None)
    raise AutotuneError(f"no family's default config launches at {shape_text(shape)}; tune it first: "
                        f"`autotune search --M {shape[0]} --N {shape[1]} --K {shape[2]}`")
