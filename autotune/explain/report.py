"""`autotune report`: the ladder, the ceilings against T, and the search's progress.

Everything here reads the database and compiles kernels; nothing needs a GPU. The
device spec is a named preset (h200 by default), stated in the report, so a database
copied off a GPU host gives the same page anywhere. Rows measured before the model
existed (no SASS columns) are explained on the fly from the source stored with them; those
counts are kept for the run only, never written: the database is opened read-only
(store.open_readonly), so a committed dataset stays byte-identical.
"""
from __future__ import annotations

import os
import statistics
from dataclasses import replace
from pathlib import Path
from typing import Any

import sqlite_utils

from autotune import store
from autotune.backends.outcome import OK, tflops
from autotune.codegen.render import render, sha256
from autotune.errors import AutotuneError
from autotune.explain import counts as ex
from autotune.explain.ladder import Line, ReportData
from autotune.explain.model import PRESETS, DeviceSpec
from autotune.explain.page import write_page
from autotune.explain.plots import write_plots
from autotune.families import FAMILIES, NAIVE, TILED, config_of_row
from autotune.space import Config, make_config

# The seed chapter's ladder: both naive mappings, then the chapter's tiled kernel (one
# output per thread, bx = by = T) with and without one float of padding per row.
LADDER: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("naive, x over rows", NAIVE.name, {"x_over": "rows"}),
    ("naive, x over cols", NAIVE.name, {"x_over": "cols"}),
    *((f"tiled T={T}" + (" padded" if pad else ""), TILED.name, {"T": T, "pad": pad})
      for T in (4, 8, 16, 32) for pad in (0, 1)),
)
# --------------------------------------------------------------------------- reading

Memo = dict[tuple[str, str], dict[str, Any]]  # (source hash, arch) -> SASS counts, for one report


def model_for(db: sqlite_utils.Database, config: Config, row: dict[str, Any] | None, spec: DeviceSpec,
              arch: str, memo: Memo) -> dict[str, Any]:
    """Model columns under the report's spec, from the row's counts or the stored source."""
    if row is not None and row.get("ffma") is not None:
        counts = {k: row.get(k) for k in ex.COUNT_COLUMNS}
    else:
        source = store.source(db, row["source_hash"]) if row and row.get("source_hash") else None
        if not ex.have_nvdisasm():
            return {}
        arch = (row or {}).get("arch") or arch
        source = source or render(config)
        key = (sha256(source), arch)
        if key not in memo:  # a kernel in the ladder and the top ten is disassembled once
            memo[key] = ex.kernel_counts(config, source, arch, db, save=False)
        counts = memo[key]
    return {**counts, **ex.model_columns(config, counts, spec)}


def measured_row(db: sqlite_utils.Database, shape: tuple[int, int, int], gpu: str | None,
                 config: Config) -> dict[str, Any] | None:
    """The latest row of this kernel at this shape that got past the constraints."""
    rows = [r for r in store.results(db, shape, gpu=gpu) if r["kernel"] == config.name and r["status"] != "invalid"]
    return rows[-1] if rows else None


def measure_command(shape: tuple[int, int, int], family: str, params: dict[str, Any]) -> str:
    M, N, K = shape
    ps = " ".join(f"-p {k}={v}" for k, v in params.items())
    return f"autotune measure --M {M} --N {N} --K {K} --family {family} {ps}"


def ladder_lines(db: sqlite_utils.Database, shape: tuple[int, int, int], gpu: str | None, spec: DeviceSpec,
                 arch: str, memo: Memo) -> list[Line]:
    out = []
    for label, family, params in LADDER:
        config = make_config(FAMILIES[family], params)
        row = measured_row(db, shape, gpu, config)
        out.append(Line(label, config, row, model_for(db, config, row, spec, arch, memo),
                        "" if row else measure_command(shape, family, params)))
    return out


def ranked_lines(db: sqlite_utils.Database, shape: tuple[int, int, int], gpu: str | None, spec: DeviceSpec,
                 arch: str, memo: Memo, n: int = 10) -> list[Line]:
    """The n fastest verified rows; the first is store.best()."""
    rows = sorted(store.results(db, shape, gpu=gpu, status=OK), key=lambda r: r["time_ms"])[:n]
    configs = [config_of_row(r) for r in rows]
    return [Line(f"#{i + 1}", c, r, model_for(db, c, r, spec, arch, memo))
            for i, (c, r) in enumerate(zip(configs, rows))]


def cublas(db: sqlite_utils.Database, shape: tuple[int, int, int], gpu: str | None) -> dict[str, Any] | None:
    """The median of the cuBLAS baselines recorded for this shape (one per search that timed it)."""
    rows = store.baselines(db, shape, gpu)
    if not rows:
        return None
    ms = statistics.median(r["time_ms"] for r in rows)
    return {"time_ms": ms, "tflops": tflops(*shape, ms), "count": len(rows), "library": rows[-1]["library"]}


def progress(db: sqlite_utils.Database, shape: tuple[int, int, int], gpu: str | None) -> dict[str, list]:
    """Per study: (trial number, TFLOP/s of that trial; 0 for anything not verified)."""
    out: dict[str, list[tuple[int, float]]] = {}
    for r in store.trial_results(db, shape, gpu):
        out.setdefault(r["study"], []).append((r["number"], r["tflops"] if r["status"] == OK else 0.0))
    return out


def build(db_path: str, shape: tuple[int, int, int], preset: str = "h200", gpu: str | None = None,
          arch: str = "sm_90") -> ReportData:
    """Everything the page and the plots show, read from the database opened read-only."""
    db = store.open_readonly(db_path)
    try:
        data = _gather(db, db_path, shape, preset, gpu, arch)
    finally:
        db.conn.close()
    if data.best:  # a copy: the same row keeps its rank in the top-ten table
        data.best = replace(data.best, label="best found (search)")
    return data


def _gather(db: sqlite_utils.Database, db_path: str, shape: tuple[int, int, int], preset: str, gpu: str | None,
            arch: str) -> ReportData:
    spec = PRESETS[preset]
    gpus = sorted({r["gpu_name"] or "" for r in store.results(db, shape, gpu=gpu)})
    if not gpus:
        M, N, K = shape
        raise AutotuneError(f"no results for {M}x{N}x{K}{' on ' + gpu if gpu else ''} in {db_path}; "
                            f"run `autotune search --M {M} --N {N} --K {K}` on a GPU host first")
    memo: Memo = {}
    top = ranked_lines(db, shape, gpu, spec, arch, memo)
    return ReportData(shape, db_path, preset, spec, [g for g in gpus if g], ladder_lines(db, shape, gpu, spec, arch, memo),
                      top[0] if top else None, top, cublas(db, shape, gpu), progress(db, shape, gpu),
                      store.profiles(db, shape, gpu))


def report_command(db_path: str, shape: tuple[int, int, int], output: str | None, preset: str,
                   gpu: str | None, arch: str = "sm_90") -> Path:
    folder = Path(output or "report-{}x{}x{}".format(*shape))
    check_folder(folder)  # before the database is read: a bad -o costs nothing
    data = build(db_path, shape, preset, gpu, arch)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        write_plots(data, folder)
        return write_page(data, folder)
    except OSError as exc:  # a full disk, or the folder changed since the check
        raise AutotuneError(f"cannot write the report into {folder}: {exc}; choose another -o") from None


def check_folder(folder: Path, what: str = "report") -> None:
    """An output folder (the report's, the suite's) must be a folder, or creatable under a writable one."""
    if folder.exists() and not folder.is_dir():
        raise AutotuneError(f"{what} folder {folder} is a file; pass -o with a folder (it is created if needed)")
    existing = next(p for p in (folder.absolute(), *folder.absolute().parents) if p.exists())
    if not existing.is_dir():
        raise AutotuneError(f"cannot create {what} folder {folder}: {existing} is a file; choose another -o")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise AutotuneError(f"cannot write the {what} into {folder}: {existing} is not writable; choose another -o")
