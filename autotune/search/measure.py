"""Measuring and recording a planned trial (search.plan): every path ends in exactly one
results row, also with several workers. A claim (store.claims) lets one worker measure a
config while the others move on; a row is only inserted where none with its key exists.
The correctness check comes before the clock, inside the backend.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable

import sqlite_utils

from autotune import store
from autotune.backends.base import Backend
from autotune.backends.outcome import INVALID, OK, Fault, Outcome, Timing, per_watt, tflops
from autotune.codegen.render import template_hash
from autotune.explain import counts as explain
from autotune.explain.model import spec_for
from autotune.explain.roofline import roofline_columns
from autotune.families.layouts import layout_name
from autotune.search.plan import Plan, plan
from autotune.space import Config, Limits
from autotune.store.claims import DONE, TAKEN, Claims, FileClaims, Owner


@dataclass
class Evaluated:
    row: dict
    cached: bool

    @property
    def tflops(self) -> float:
        """What the search maximises: 0 for anything that is not a verified, timed kernel."""
        return self.row["tflops"] if self.row["status"] == OK else 0.0


AheadWork = Callable[[], "dict[str, Any] | None"]  # waits for a config's compile-ahead work: its SASS counts, or None


def evaluate(db: sqlite_utils.Database, backend: Backend, config: Config, limits: Limits,
             peak_tflops: float | None, owner: Owner | None = None, claims: Claims | None = None,
             ahead: AheadWork | None = None, redo: store.Redo | None = None) -> Evaluated | None:
    """The config's row: refused, reused or measured (also when `redo` says to measure its recorded
    row again). None when another live worker is measuring this very config right now (nothing is
    recorded; the caller moves on)."""
    start = time.perf_counter()
    p = plan(db, backend, config, limits, redo)
    if p.refused:
        return _record(db, backend, _base(backend, config) | {"source_hash": ""},
                       Outcome(INVALID, reason="; ".join(p.refused)), None)
    if p.reused is not None:
        return Evaluated(p.reused, cached=True)
    return measure_and_record(db, backend, p, peak_tflops, owner or Owner(backend.provenance.get("worker", "")),
                              claims or FileClaims(db), ahead, start)


def measure_and_record(db: sqlite_utils.Database, backend: Backend, p: Plan, peak_tflops: float | None,
                       owner: Owner, claims: Claims, ahead: AheadWork | None, start: float) -> Evaluated | None:
    """Claim, measure, record. `ahead` (the search's compile-ahead, search.pipeline) is waited for
    just before the GPU: the cubin is then in the disk cache, and the SASS counts it returns
    spare the explain step a disassembly."""
    assert p.key is not None
    claimed = claims.claim(p.key, owner, p.source, p.redo)
    if claimed.state == DONE:
        return Evaluated(claimed.row or {}, cached=True)
    if claimed.state == TAKEN:
        return None
    config = p.config
    base = _base(backend, config) | {"source_hash": p.key[-1], "template_hash": template_hash(config)}
    try:
        store.insert_source(db, p.key[-1], config.name, config.family.name, p.source)
        before_gpu = time.perf_counter()
        counts = ahead() if ahead else None
        waited = time.perf_counter()
        outcome = backend.measure(config, p.source)
    except Fault as fault:  # record the crash as a row, then let the caller stop this process
        claims.finish(p.key, _record(db, backend, base, fault.outcome, None, p.redo).row)
        raise
    except BaseException:  # interrupted, or an EnvironmentFault: no row, so the next run measures it again
        claims.release(p.key, owner)
        raise
    measured = time.perf_counter()
    base |= explain.for_result(db, backend, config, p.source, outcome.status, counts)  # {} if it did not compile
    # where a new trial's time goes: the backend reports compile, verify and time; this is the rest
    # (render: planning, the claim and the source row; wait: for the compile ahead)
    base |= {"t_render_s": round(before_gpu - start, 4), "t_wait_s": round(waited - before_gpu, 4),
             "t_explain_s": round(time.perf_counter() - measured, 4),
             "t_trial_s": round(time.perf_counter() - start, 4)}
    done = _record(db, backend, base, outcome, peak_tflops, p.redo)
    claims.finish(p.key, done.row)
    return done


def _base(backend: Backend, config: Config) -> dict[str, Any]:
    M, N, K = backend.shape
    return {"kernel": config.name, "family": config.family.name, "backend": backend.name,
            "precision": config.family.precision, "M": M, "N": N, "K": K, "batch": backend.batch,
            **config.values,
            **backend.provenance}


def _record(db: sqlite_utils.Database, backend: Backend, base: dict, outcome: Outcome,
            peak_tflops: float | None, redo: store.Redo | None = None) -> Evaluated:
    row = {**base, **outcome.row()}
    if outcome.timing:
        row |= _rates(backend, outcome.timing, peak_tflops, layout_name(row))
    row |= explain.measured_over_ceiling(row)
    row |= roofline_columns(row, spec_for(row.get("gpu_name")))  # the shape's floors on this GPU, no SASS
    stored, inserted = store.record_result(db, row, redo)  # a refused config raced by two workers: one row
    return Evaluated(stored, cached=not inserted)


def _rates(backend: Backend, timing: Timing, peak_tflops: float | None, layout: str) -> dict:
    """The row's rates; cuBLAS's time is cuBLAS's in the row's own layout (cublas_layout), where timed.
    Energy only where the power was read (a column first added with a None would take the wrong type)."""
    M, N, K = backend.shape
    ms = timing.median_ms
    rate = tflops(M, N, K, ms) * backend.batch
    cublas = (backend.layout_baselines or {}).get(layout) or (backend.baseline if layout == "NN" else None)
    cublas_ms = cublas.median_ms if cublas else None
    energy = {"gflops_per_watt": per_watt(rate, timing.watts)}
    if cublas and cublas.watts:
        energy |= {"cublas_watts": cublas.watts,
                   "cublas_gflops_per_watt": per_watt(tflops(M, N, K, cublas.median_ms) * backend.batch, cublas.watts)}
    return {"tflops": rate,
            "cublas_ms": cublas_ms, "cublas_layout": layout if cublas_ms else None,
            "pct_cublas": 100.0 * cublas_ms / ms if cublas_ms else None,
            "pct_peak": 100.0 * rate / peak_tflops if peak_tflops else None,
            **{k: v for k, v in energy.items() if v is not None}}
