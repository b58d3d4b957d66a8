"""The time model (autotune/explain/timemodel.py) at shapes it never saw: leave one shape out, and other databases.

For each shape of the suite database, the model is fitted on the rows of every other shape and
ranks the configs measured at the held-out one. Per shape: the Spearman rank correlation of
predicted and measured times, the regret of its first choice (that config's measured time over
the best measured there) and of its top five (the best of them over the best). Beside it, the ridge
regression alone (the model without its trees), and a baseline that ranks
the same configs the way `export` borrows from other shapes (api/export.nearest_best over
autotune/store/nearest.py): those the nearest recorded shape measured, fastest there first, then
those of the next nearest, and so on; a config no other shape measured goes last. Then the model
fitted on the whole suite ranks the configs of every shape of other databases of the same GPU
(--other), none of whose shapes the suite holds. No GPU: it reads the recorded rows.

    PYTHONPATH=. python benchmarks/timemodel_eval.py   # writes benchmarks/data/timemodel-h200.json
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Sequence

import numpy as np

from autotune.explain.timemodel import TimeModel, measured, read_rows
from autotune.space import Config, Shape, rank_shapes, shape_text

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sources import commit  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
# The one place the data is named (the integrator may move the file).
SUITE_DB = ROOT / "benchmarks" / "data" / "h200-suite.sqlite.gz"
OTHER_DBS = [ROOT / "benchmarks" / "data" / f"h200-{name}.sqlite.gz"
             for name in ("host-bound", "host-bound-misaligned", "few-tiles")]
MIN_CONFIGS = 5  # a shape of another database with fewer verified configs has too little to rank
OUT = ROOT / "benchmarks" / "data" / "timemodel-h200.json"
TOP = 5  # the top-k regret: the best of the first TOP choices, as a search that times them would find

Sample = tuple[Config, Shape, float]


def ranks(values: Sequence[float]) -> np.ndarray:
    """Ranks from 0, ties sharing their mean rank (what Spearman's coefficient needs)."""
    a = np.asarray(values, dtype=float)
    order = np.argsort(a, kind="stable")
    r = np.empty(len(a))
    r[order] = np.arange(len(a))
    for value in np.unique(a):
        tied = a == value
        r[tied] = r[tied].mean()
    return r


def spearman(predicted: Sequence[float], actual: Sequence[float]) -> float:
    return float(np.corrcoef(ranks(predicted), ranks(actual))[0, 1])


def regrets(predicted: Sequence[float], actual: Sequence[float]) -> tuple[float, float]:
    """(top-1 regret, top-TOP regret): the measured time of the first (best of the first TOP) predicted
    over the best measured."""
    order = np.argsort(np.asarray(predicted), kind="stable")
    best = min(actual)
    return actual[order[0]] / best, min(actual[i] for i in order[:TOP]) / best


def nearest_order(samples: list[Sample], shape: Shape, configs: list[Config]) -> list[float]:
    """Each config's place in the baseline's order (lower first): the configs the nearest other shape
    measured, fastest there first, then those of the next nearest shape, and so on, as
    api/export.nearest_best walks them; inf for a config no other shape measured."""
    by_shape: dict[Shape, dict[str, float]] = {}
    for config, s, t in samples:
        by_shape.setdefault(s, {})[config.name] = t
    order = rank_shapes(shape, by_shape)
    keys: list[tuple[float, float]] = []
    for config in configs:
        near = next((i for i, s in enumerate(order) if config.name in by_shape[s]), None)
        keys.append((math.inf, math.inf) if near is None else (near, by_shape[order[near]][config.name]))
    place = {key: i for i, key in enumerate(sorted(set(keys)))}
    return [math.inf if math.isinf(k[0]) else float(place[k]) for k in keys]


def scored(predicted: list[float], actual: list[float]) -> dict:
    top1, topk = regrets(predicted, actual)
    return {"spearman": round(spearman(predicted, actual), 3), "top1_regret": round(top1, 3),
            f"top{TOP}_regret": round(topk, 3)}


def evaluate_shape(rows: list[dict], samples: list[Sample], shape: Shape) -> dict:
    """The model fitted without the shape's rows, and the nearest-shape baseline, at that shape."""
    rest = [r for r in rows if (r["M"], r["N"], r["K"]) != shape]
    started = time.perf_counter()
    model = TimeModel.fit(rest)
    fit_s = time.perf_counter() - started
    ridge = TimeModel.fit(rest, trees_too=False)
    held = [(c, t) for c, s, t in samples if s == shape]
    configs, actual = [c for c, _ in held], [t for _, t in held]
    baseline = nearest_order([x for x in samples if x[1] != shape], shape, configs)
    return {"shape": shape_text(shape), "configs": len(held), "best_ms": round(min(actual), 5),
            "fit_s": round(fit_s, 2), "model": scored(list(model.predict_many(configs, shape)), actual),
            "ridge": scored(list(ridge.predict_many(configs, shape)), actual),
            "nearest": {**scored(baseline, actual), "covered": sum(math.isfinite(b) for b in baseline)}}


def evaluate_other(model: TimeModel, ridge: TimeModel, path: Path) -> dict:
    """The suite's fit at every shape of another database with at least MIN_CONFIGS verified configs."""
    samples = measured(read_rows(path))
    shapes = []
    for shape in sorted({s for _, s, _ in samples}):
        held = [(c, t) for c, s, t in samples if s == shape]
        if len(held) < MIN_CONFIGS:
            continue
        configs, actual = [c for c, _ in held], [t for _, t in held]
        shapes.append({"shape": shape_text(shape), "configs": len(held),
                       "model": scored(list(model.predict_many(configs, shape)), actual),
                       "ridge": scored(list(ridge.predict_many(configs, shape)), actual)})
    return {"database": relative(path), "shapes": len(shapes),
            "summary": {who: summary(shapes, who) for who in ("model", "ridge")}}


def relative(path: Path) -> str:
    return path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)


def geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def summary(shapes: list[dict], who: str) -> dict:
    rho = [s[who]["spearman"] for s in shapes]
    top1 = [s[who]["top1_regret"] for s in shapes]
    topk = [s[who][f"top{TOP}_regret"] for s in shapes]
    return {"median_spearman": round(float(np.median(rho)), 3), "geomean_top1_regret": round(geomean(top1), 3),
            "max_top1_regret": round(max(top1), 3), f"geomean_top{TOP}_regret": round(geomean(topk), 3),
            "shapes_top1_within_10pct": sum(t <= 1.1 for t in top1)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", default=str(SUITE_DB), help="results database (.sqlite or .sqlite.gz)")
    parser.add_argument("--other", nargs="*", default=[str(p) for p in OTHER_DBS],
                        help="databases of the same GPU whose shapes the fit on --db never saw")
    parser.add_argument("-o", "--out", default=str(OUT), help="output JSON")
    args = parser.parse_args()
    rows = read_rows(args.db)
    samples = measured(rows)
    started = time.perf_counter()
    whole = TimeModel.fit(rows)
    fit_all_s = time.perf_counter() - started
    others = [evaluate_other(whole, TimeModel.fit(rows, trees_too=False), Path(p)) for p in args.other]
    shapes = []
    for shape in sorted({s for _, s, _ in samples}):
        shapes.append(evaluate_shape(rows, samples, shape))
        r = shapes[-1]
        print(f"{r['shape']:>16} {r['configs']:4d} model rho {r['model']['spearman']:5.2f} "
              f"top1 {r['model']['top1_regret']:5.2f} | ridge top1 {r['ridge']['top1_regret']:5.2f} | nearest rho "
              f"{r['nearest']['spearman']:5.2f} top1 {r['nearest']['top1_regret']:5.2f}", flush=True)
    out = {"database": relative(Path(args.db)),
           "command": "PYTHONPATH=. python benchmarks/timemodel_eval.py", "commit": commit(),
           "rows": whole.rows, "shapes_recorded": whole.shapes, "fit_all_s": round(fit_all_s, 2), "top": TOP,
           "summary": {who: summary(shapes, who) for who in ("model", "ridge", "nearest")}, "shapes": shapes,
           "other_databases": others}
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps({"summary": out["summary"], "other": [o["summary"] for o in others]}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
