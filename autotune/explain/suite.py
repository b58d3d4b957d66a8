"""What a shape suite found, per shape: our best verified kernel against cuBLAS timed in the same
process, and both against the shape's roofline (explain.roofline). Written as JSON (the data),
a markdown table and a PNG (matplotlib, Agg), all three from the results database.

Each shape's numbers come from one results row, the fastest verified one: `ours_ms` is its
median time and `cublas_ms` the cuBLAS median its worker timed for the same shape, so the two
were measured by the same process on the same GPU.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import sqlite_utils

from autotune import store
from autotune.explain.model import DeviceSpec
from autotune.explain.roofline import Roofline, roofline


@dataclass(frozen=True)
class SuiteShape:
    M: int
    N: int
    K: int
    group: str

    @property
    def shape(self) -> tuple[int, int, int]:
        return (self.M, self.N, self.K)

    @property
    def label(self) -> str:
        return f"{self.M}x{self.N}x{self.K}"


# the JSON's energy keys and the results columns they come from (backends/cuda/energy.py; None where not read)
ENERGY = {"ours_watts": "watts", "ours_gflops_per_watt": "gflops_per_watt", "cublas_watts": "cublas_watts",
          "cublas_gflops_per_watt": "cublas_gflops_per_watt"}


@dataclass
class SuiteRow:
    shape: SuiteShape
    roofline: Roofline
    best: dict[str, Any] | None  # the fastest verified results row, if any
    tuning_s: float | None = None  # seconds this run spent on the shape (None: not tuned by this run)
    error: str | None = None  # why the shape was not tuned

    @property
    def ours_ms(self) -> float | None:
        return self.best["time_ms"] if self.best else None

    @property
    def cublas_ms(self) -> float | None:
        return self.best.get("cublas_ms") if self.best else None

    @property
    def ratio(self) -> float | None:
        """cuBLAS time over ours: above 1, ours is faster."""
        return self.cublas_ms / self.ours_ms if self.ours_ms and self.cublas_ms else None

    def energy(self, column: str) -> float | None:
        """watts, gflops_per_watt, cublas_watts or cublas_gflops_per_watt of the best row, where read."""
        return self.best.get(column) if self.best else None

    @property
    def pct_roofline(self) -> float | None:
        return 100.0 * self.roofline.ms / self.ours_ms if self.ours_ms else None

    @property
    def cublas_pct_roofline(self) -> float | None:
        return 100.0 * self.roofline.ms / self.cublas_ms if self.cublas_ms else None

    def as_json(self) -> dict[str, Any]:
        s = self.shape
        return {"M": s.M, "N": s.N, "K": s.K, "group": s.group, "ours_ms": self.ours_ms, "cublas_ms": self.cublas_ms,
                "kernel": self.best["kernel"] if self.best else None,
                "result_id": self.best["id"] if self.best else None,
                "roofline_ms": self.roofline.ms, "fma_floor_ms": self.roofline.fma_ms,
                "dram_floor_ms": self.roofline.dram_ms, "memory_bound": self.roofline.memory_bound,
                "pct_roofline": self.pct_roofline, "cublas_over_ours": self.ratio, "tuning_s": self.tuning_s,
                "error": self.error, **{key: self.energy(column) for key, column in ENERGY.items()}}


@dataclass
class Suite:
    device: str | None  # the GPU model (the rows' gpu_name)
    backend: str
    preset: str  # the device spec the roofline is computed for
    spec: DeviceSpec
    budget: dict[str, Any]
    commit: str | None
    tuning_s: float | None  # the whole run's tuning time (None: nothing tuned by this run)
    rows: list[SuiteRow] = field(default_factory=list)

    def compared(self) -> list[SuiteRow]:
        return [r for r in self.rows if r.ratio is not None]

    @property
    def geomean(self) -> float | None:
        """Geometric mean of cuBLAS/ours over the shapes that have both times."""
        ratios = [r.ratio for r in self.compared() if r.ratio]
        return math.exp(sum(math.log(x) for x in ratios) / len(ratios)) if ratios else None

    @property
    def worst(self) -> SuiteRow | None:
        rows = self.compared()
        return min(rows, key=lambda r: r.ratio or 0.0) if rows else None

    def as_json(self) -> dict[str, Any]:
        worst = self.worst
        s = self.spec
        return {"device": self.device, "backend": self.backend, "commit": self.commit, "created_at": store.now(),
                "budget": self.budget, "tuning_s": self.tuning_s,
                "roofline_spec": {"preset": self.preset, "name": s.name, "fma_tflops": s.fma_tflops,
                                  "dram_gbps": s.dram_gbps},
                "geomean_cublas_over_ours": self.geomean,
                "worst": {**worst.as_json(), "shape": worst.shape.label} if worst else None,
                "shapes": [r.as_json() for r in self.rows]}


# --------------------------------------------------------------------------- from the database

def suite_device(db: sqlite_utils.Database, shapes: list[SuiteShape], backend: str) -> str | None:
    """The GPU model of the latest row at any of the shapes: the one this suite ran on. A --db
    that also holds another model's rows (an earlier run elsewhere) never mixes into the suite."""
    latest: dict[str, Any] | None = None
    for s in shapes:
        for row in store.results(db, s.shape, backend):
            if latest is None or row["id"] > latest["id"]:
                latest = row
    return latest["gpu_name"] if latest else None


def suite_rows(db: sqlite_utils.Database, shapes: list[SuiteShape], backend: str, device: str | None,
               spec: DeviceSpec, seconds: dict[SuiteShape, float], errors: dict[SuiteShape, str],
               precision: str = "fp32") -> list[SuiteRow]:
    """Per shape the fastest verified row on `device` of a family the suite's contract admits
    (store.best: status ok only; an fp32 suite never reports a tensor-core row of the same database)."""
    out = []
    for s in shapes:
        best = store.best(db, s.shape, backend, device, precision=precision) if device else None
        out.append(SuiteRow(s, roofline(s.M, s.N, s.K, spec), best, seconds.get(s), errors.get(s)))
    return out


# --------------------------------------------------------------------------- writing

def fmt(value: float | None, spec: str) -> str:
    return "—" if value is None else format(value, spec)


def summary_lines(suite: Suite) -> list[str]:
    """What the command prints, and what the markdown page says above its table."""
    n = len(suite.compared())
    if suite.geomean is None:
        lines = [f"no shape has both our time and a cuBLAS time (backend {suite.backend}): no ratio to cuBLAS"]
    else:
        w = suite.worst
        assert w is not None and w.ratio is not None
        lines = [f"geometric mean of cuBLAS/ours over {n} shapes: {suite.geomean:.3f} (above 1: faster than cuBLAS)",
                 f"worst shape: {w.shape.label} ({w.shape.group}), cuBLAS/ours {w.ratio:.3f}"]
    missing = [r.shape.label for r in suite.rows if r.best is None]
    if missing:
        lines.append(f"no verified kernel for {len(missing)} shape(s): {', '.join(missing)}")
    return lines


def table(suite: Suite) -> list[str]:
    """A row per shape; with the power columns where any shape's best row has its power read."""
    powered = any(r.energy("watts") for r in suite.rows)
    watts = " cuBLAS W | ours W | cuBLAS GFLOP/s/W | ours GFLOP/s/W |" if powered else ""
    out = ["| shape | group | cuBLAS ms | ours ms | cuBLAS/ours | % of roofline | memory-bound? |" + watts + " kernel |",
           "|---|---|--:|--:|--:|--:|---|" + "--:|" * 4 * powered + "---|"]
    for r in suite.rows:
        kernel = f"`{r.best['kernel']}`" if r.best else (r.error or "no verified kernel")
        energy = "".join(f" {fmt(r.energy(c), spec)} |" for c, spec in (
            ("cublas_watts", ".0f"), ("watts", ".0f"), ("cublas_gflops_per_watt", ".3g"), ("gflops_per_watt", ".3g")))
        out.append(f"| {r.shape.label} | {r.shape.group} | {fmt(r.cublas_ms, '.4g')} | {fmt(r.ours_ms, '.4g')} | "
                   f"{fmt(r.ratio, '.3f')} | {fmt(r.pct_roofline, '.1f')} | "
                   f"{'yes' if r.roofline.memory_bound else 'no'} |{energy if powered else ''} {kernel} |")
    return out


def page(suite: Suite, png_name: str) -> str:
    b, s = suite.budget, suite.spec
    took = f"; tuning took {suite.tuning_s:.0f} s in all" if suite.tuning_s is not None else ""
    spent = (f"Budget per shape: {b['trials']} new trials and at most {b['timeout_s']:g} s (sampler {b['sampler']}, "
             if b.get("tuned", True) else "Nothing tuned in this run (`--no-tune`): the fastest rows the database held ("
             ) + f"families {', '.join(b['families'])}, contract {b.get('precision', 'fp32')}){took}."
    lines = [
        f"# SGEMM shape suite: {suite.device or 'no device'} ({suite.backend})", "",
        f"Commit `{suite.commit or 'unknown'}`. {spent} "
        f"Our time and cuBLAS's in each row were measured by the same worker process.", "",
        f"Roofline (preset `{suite.preset}` = {s.name}: FMA peak {s.fma_tflops:.1f} TFLOP/s, DRAM "
        f"{s.dram_gbps:.0f} GB/s): the larger of 2MNK / peak and 4(MK + KN + MN) bytes / bandwidth (A and B "
        f"read once, C written once). A shape is memory-bound when the DRAM floor is the larger.", "",
        *[f"- {line}" for line in summary_lines(suite)], "",
        *table(suite), "",
        f"![cuBLAS/ours and % of roofline per shape]({png_name})", "",
    ]
    return "\n".join(lines)


def write_plot(suite: Suite, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = suite.rows
    labels = [f"{r.shape.label} ({r.shape.group}{', mem' if r.roofline.memory_bound else ''})" for r in rows]
    y = list(range(len(rows)))[::-1]
    fig, (left, right) = plt.subplots(1, 2, sharey=True, figsize=(12, 0.32 * len(rows) + 1.8))
    left.barh(y, [r.ratio or 0.0 for r in rows], color="tab:blue")
    left.axvline(1.0, color="black", linewidth=0.8)
    left.set_xlabel("cuBLAS time / our time (above 1: faster than cuBLAS)")
    left.set_yticks(y, labels, fontsize=8)
    right.barh([v + 0.2 for v in y], [r.pct_roofline or 0.0 for r in rows], height=0.4, color="tab:blue", label="ours")
    right.barh([v - 0.2 for v in y], [r.cublas_pct_roofline or 0.0 for r in rows], height=0.4, color="0.6",
               label="cuBLAS")
    right.set_xlabel(f"% of the shape's roofline ({suite.spec.name})")
    right.legend(loc="lower right", fontsize=8)
    fig.suptitle(f"SGEMM shape suite, {suite.device or 'no device'} ({suite.backend}, commit {suite.commit or '?'})")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_suite(suite: Suite, folder: Path, stem: str) -> list[Path]:
    """The JSON, the markdown page and the PNG, side by side (the page links the PNG by name)."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / f"{stem}.json", folder / f"{stem}.md", folder / f"{stem}.png"]
    paths[0].write_text(json.dumps(suite.as_json(), indent=1) + "\n")
    paths[1].write_text(page(suite, paths[2].name))
    write_plot(suite, paths[2])
    return paths
