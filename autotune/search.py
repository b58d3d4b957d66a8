"""The search: Optuna proposes configs, evaluate() refuses, reuses or measures them.

Each trial first picks a family, then that family's parameters (named "family.param" in
Optuna so that two families may share a parameter name with different values). Results
already in the database for this GPU and shape are fed to the study before it starts, so
a new search begins where the last one stopped. `--trials` counts new measurements:
configs refused by a constraint or answered from the database are recorded but not counted.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

import optuna
import sqlite_utils

from . import store
from .evaluate import Backend, Evaluated, evaluate
from .outcome import INVALID, OK
from .space import Config, Family, Limits, Value, valid_configs

SAMPLERS = ("tpe", "random", "grid")
MAX_TRIALS_PER_NEW = 10  # a sampler that keeps proposing measured configs stops eventually


@dataclass
class SearchResult:
    study: str
    trials: int = 0
    new: int = 0
    best: dict | None = None
    statuses: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    interrupted: bool = False


def distributions(families: list[Family]) -> dict[str, optuna.distributions.BaseDistribution]:
    cat = optuna.distributions.CategoricalDistribution
    out: dict[str, optuna.distributions.BaseDistribution] = {"family": cat([f.name for f in families])}
    for f in families:
        for p in f.params:
            out[f"{f.name}.{p.name}"] = cat(list(p.values))
    return out


def suggest(trial: optuna.Trial, families: list[Family]) -> Config:
    dists = distributions(families)
    family = next(f for f in families if f.name == trial.suggest_categorical("family", dists["family"].choices))
    values: dict[str, Value] = {}
    for p in family.params:
        key = f"{family.name}.{p.name}"
        values[p.name] = trial.suggest_categorical(key, dists[key].choices)
    return Config(family, tuple(values.items()))


def trial_params(config: Config) -> dict[str, Value]:
    return {"family": config.family.name, **{f"{config.family.name}.{k}": v for k, v in config.params}}


def make_sampler(name: str, seed: int | None) -> optuna.samplers.BaseSampler:
    if name == "tpe":
        return optuna.samplers.TPESampler(seed=seed)
    from . import samplers  # gp, tpe-mv, qmc and samplers a benchmark binds (autotune/samplers.py)

    return samplers.make(name, seed) or optuna.samplers.RandomSampler(seed=seed)  # grid: enqueued, see run_search


def warm_start(study: optuna.Study, db: sqlite_utils.Database, backend: Backend, families: list[Family]) -> set[str]:
    """Tell the study what the database already knows; returns the kernels measured so far."""
    dists = distributions(families)
    names = {f.name: f for f in families}
    seen: set[str] = set()
    for row in store.results(db, backend.shape, backend.name, backend.provenance["gpu_uuid"]):
        family = names.get(row["family"])
        if family is None or row["kernel"] in seen:
            continue
        config = Config(family, tuple((p.name, row[p.name]) for p in family.params))
        params = trial_params(config)
        value = row["tflops"] if row["status"] == OK else 0.0
        study.add_trial(optuna.trial.create_trial(params=params, distributions={k: dists[k] for k in params},
                                                  value=value))
        seen.add(row["kernel"])
    return seen


def run_search(db: sqlite_utils.Database, backend: Backend, families: list[Family], limits: Limits, *,
               sampler: str = "tpe", trials: int = 60, timeout: float | None = None, seed: int | None = 0,
               peak_tflops: float | None = None, progress=None) -> SearchResult:
    optuna.logging.set_verbosity(logging.WARNING)
    fams = "+".join(f.name for f in families)
    M, N, K = backend.shape
    result = SearchResult(study=f"{fams}-{M}x{N}x{K}-{sampler}-seed{seed}-{store.now()}")
    study = optuna.create_study(direction="maximize", sampler=make_sampler(sampler, seed))
    measured = warm_start(study, db, backend, families)
    budget = trials * MAX_TRIALS_PER_NEW
    if sampler == "grid":  # the valid space, in order, less what the database already has
        todo = [c for f in families for c in valid_configs(f, limits) if c.name not in measured]
        for config in todo[:trials]:
            study.enqueue_trial(trial_params(config))
        budget = min(trials, len(todo))

    def objective(trial: optuna.Trial) -> float:
        done = evaluate(db, backend, suggest(trial, families), limits, peak_tflops)
        store.insert_trial(db, result.study, trial.number, done.row["id"], done.cached)
        _account(result, done)
        if progress:
            progress(result, done)
        if result.new >= trials or result.trials >= budget:
            trial.study.stop()
        return done.tflops

    start = time.monotonic()
    try:
        if budget > 0:
            study.optimize(objective, n_trials=budget, timeout=timeout, catch=())
    except KeyboardInterrupt:
        result.interrupted = True
    result.seconds = time.monotonic() - start
    return result


def _account(result: SearchResult, done: Evaluated) -> None:
    result.trials += 1
    status = done.row["status"]
    result.new += 0 if done.cached or status == INVALID else 1  # refused configs cost no GPU time
    result.statuses[status] = result.statuses.get(status, 0) + 1
    if status == OK and (result.best is None or done.row["time_ms"] < result.best["time_ms"]):
        result.best = done.row
