"""One config, one shape, one backend: refuse, reuse or measure it, and record the row.

The order matters: constraints before rendering, the database before the GPU, the
correctness check before the clock. Every path ends in exactly one results row, also with
several workers: a claim (store.claim) lets one worker measure a config while the others
move on, and a row is only inserted where none with its key exists.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Protocol

import sqlite_utils

from . import explain, store
from .codegen import render, sha256, template_hash
from .outcome import INVALID, OK, Fault, Outcome, tflops
from .space import Config, Limits, shape_violations, violations


class Backend(Protocol):
    name: str
    shape: tuple[int, int, int]
    baseline: object  # Timing of cuBLAS at this shape (None where there is none, e.g. sim)

    @property
    def provenance(self) -> dict: ...

    def measure(self, config: Config, source: str) -> Outcome: ...


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
             peak_tflops: float | None, owner: store.Owner | None = None, ledger=None,
             ahead: AheadWork | None = None) -> Evaluated | None:
    """The config's row: refused, reused or measured. None when another live worker is measuring
    this very config right now (nothing is recorded; the caller moves on). `ahead` (the search's
    compile-ahead, pipeline.py) is waited for just before the GPU: the cubin is then in the disk
    cache, and the SASS counts it returns spare the explain step a disassembly."""
    start = time.perf_counter()
    M, N, K = backend.shape
    prov = backend.provenance
    base = {"kernel": config.name, "family": config.family.name, "backend": backend.name,
            "M": M, "N": N, "K": K, **config.values, **prov}
    bad = refusals(backend, config, limits)
    if bad:
        return _record(db, backend, {**base, "source_hash": ""}, Outcome(INVALID, reason="; ".join(bad)), None)
    source = render(config, limits)
    source_hash = sha256(source)
    key = measurement_key(backend, config, source_hash)
    earlier = store.find_key(db, key)  # the database before the GPU: a row there is reused
    if earlier:
        return Evaluated(earlier, cached=True)
    owner = owner or store.Owner(prov.get("worker", ""))
    if ledger:  # hosts sharing a study: claim it there first (autotune/ledger.py)
        state, shared = ledger.claim(key, owner)
        if state == store.DONE:
            return Evaluated(store.copy_result(db, shared, source), cached=True)
        if state == store.TAKEN:
            return None
    state = store.claim(db, key, owner)  # under the write lock: another worker may just have begun
    if state != store.MINE:
        if ledger and state == store.DONE:
            ledger.finish(key, store.find_key(db, key))  # measured here before the ledger knew it
        elif ledger:
            ledger.release(key, owner)
        return Evaluated(store.find_key(db, key), cached=True) if state == store.DONE else None
    base |= {"source_hash": source_hash, "template_hash": template_hash(config)}
    try:
        store.insert_source(db, source_hash, config.name, config.family.name, source)
        before_gpu = time.perf_counter()
        counts = ahead() if ahead else None
        waited = time.perf_counter()
        outcome = backend.measure(config, source)
    except Fault as fault:  # record the crash as a row, then let the caller stop this process
        crashed = _record(db, backend, base, fault.outcome, None)
        if ledger:
            ledger.finish(key, crashed.row)
        raise
    except BaseException:  # interrupted: no row, so the next run measures it again
        store.release(db, key, owner)
        if ledger:
            ledger.release(key, owner)
        raise
    measured = time.perf_counter()
    base |= explain.for_result(db, backend, config, source, outcome.status, counts)  # {} if it did not compile
    # where a new trial's time goes: the backend reports compile, verify and time; this is the rest
    # (render: rendering, the reuse lookup, the claim and the source row; wait: for the compile ahead)
    base |= {"t_render_s": round(before_gpu - start, 4), "t_wait_s": round(waited - before_gpu, 4),
             "t_explain_s": round(time.perf_counter() - measured, 4),
             "t_trial_s": round(time.perf_counter() - start, 4)}
    done = _record(db, backend, base, outcome, peak_tflops)
    if ledger:
        ledger.finish(key, done.row)
    return done


def refusals(backend: Backend, config: Config, limits: Limits) -> list[str]:
    """Why this config is refused at the backend's shape (empty: it is not)."""
    M, N, _ = backend.shape
    return violations(config, limits) + shape_violations(config, M, N, limits)


def measurement_key(backend: Backend, config: Config, source_hash: str) -> store.Key:
    M, N, K = backend.shape
    return (backend.name, backend.provenance["gpu_name"], M, N, K, config.name, source_hash)


def source_to_measure(db: sqlite_utils.Database, backend: Backend, config: Config, limits: Limits) -> str | None:
    """The source evaluate() would send to the GPU, or None when it would refuse the config or
    reuse a row: what is worth compiling ahead."""
    if refusals(backend, config, limits):
        return None
    source = render(config, limits)
    return None if store.find_key(db, measurement_key(backend, config, sha256(source))) else source


def _record(db: sqlite_utils.Database, backend: Backend, base: dict, outcome: Outcome,
            peak_tflops: float | None) -> Evaluated:
    row = {**base, **outcome.row()}
    if outcome.timing:
        row |= _rates(backend, outcome.timing.median_ms, peak_tflops)
    row |= explain.measured_over_ceiling(row)
    stored, inserted = store.record_result(db, row)  # a refused config raced by two workers: one row
    return Evaluated(stored, cached=not inserted)


def _rates(backend: Backend, ms: float, peak_tflops: float | None) -> dict:
    M, N, K = backend.shape
    rate = tflops(M, N, K, ms)
    cublas_ms = backend.baseline.median_ms if backend.baseline else None
    return {"tflops": rate,
            "cublas_ms": cublas_ms,
            "pct_cublas": 100.0 * cublas_ms / ms if cublas_ms else None,
            "pct_peak": 100.0 * rate / peak_tflops if peak_tflops else None}
