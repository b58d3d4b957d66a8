"""`autotune report`: the ladder, the ceilings against T, and the search's progress.

Everything here reads the database and compiles kernels; nothing needs a GPU. The
device spec is a named preset (h200 by default), stated in the report, so a database
copied off a GPU host gives the same page anywhere. Rows measured before the model
existed (no SASS columns) are explained on the fly from the source stored with them.

The database is read through a private copy: even a read-only SQLite reader of a
WAL database leaves -shm/-wal files beside it, and a committed database must stay as it is.
"""
from __future__ import annotations

import shutil
import sqlite3
import statistics
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import sqlite_utils

from autotune import store
from autotune.backends.outcome import OK, tflops
from autotune.codegen.render import render
from autotune.errors import AutotuneError
from autotune.explain import counts as ex
from autotune.explain.ladder import Line, ReportData
from autotune.explain.model import PRESETS, DeviceSpec
from autotune.explain.page import write_page
from autotune.explain.plots import write_plots
from autotune.families import FAMILIES, config_of_row
from autotune.space import Config, make_config

# The seed chapter's ladder: both naive mappings, then the chapter's tiled kernel (one
# output per thread, bx = by = T) with and without one float of padding per row.
LADDER: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("naive, x over rows", "naive", {"x_over": "rows"}),
    ("naive, x over cols", "naive", {"x_over": "cols"}),
    *((f"tiled T={T}" + (" padded" if pad else ""), "tiled", {"T": T, "pad": pad})
      for T in (4, 8, 16, 32) for pad in (0, 1)),
)
# --------------------------------------------------------------------------- reading

def open_copy(db_path: str, into: Path) -> sqlite_utils.Database:
    """A private copy of the database (and its WAL, where one holds recent commits)."""
    if not Path(db_path).is_file():
        raise AutotuneError(f"no database at {db_path}; pass --db with the file a search wrote")
    for suffix in ("", "-wal"):
        if Path(db_path + suffix).is_file():
            shutil.copyfile(db_path + suffix, into / ("copy.sqlite" + suffix))
    try:
        db = sqlite_utils.Database(sqlite3.connect(into / "copy.sqlite"))
        if "results" not in db.table_names():
            raise AutotuneError(f"{db_path} has no results table: is it an autotune database?")
    except sqlite3.DatabaseError as exc:
        raise AutotuneError(f"cannot read database {db_path}: {exc}") from None
    return db


def model_for(db: sqlite_utils.Database, config: Config, row: dict[str, Any] | None, spec: DeviceSpec,
              arch: str) -> dict[str, Any]:
    """Model columns under the report's spec, from the row's counts or the stored source."""
    if row is not None and row.get("ffma") is not None:
        counts = {k: row.get(k) for k in ex.COUNT_COLUMNS}
    else:
        source = store.source(db, row["source_hash"]) if row and row.get("source_hash") else None
        if not ex.have_nvdisasm():
            return {}
        arch = (row or {}).get("arch") or arch
        # save=True writes only into the private copy: a cache for this run
        counts = ex.kernel_counts(config, source or render(config), arch, db)
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
                 arch: str) -> list[Line]:
    out = []
    for label, family, params in LADDER:
        config = make_config(FAMILIES[family], params)
        row = measured_row(db, shape, gpu, config)
        out.append(Line(label, config, row, model_for(db, config, row, spec, arch),
                        "" if row else measure_command(shape, family, params)))
    return out


def ranked_lines(db: sqlite_utils.Database, shape: tuple[int, int, int], gpu: str | None, spec: DeviceSpec,
                 arch: str, n: int = 10) -> list[Line]:
    """The n fastest verified rows; the first is store.best()."""
    rows = sorted(store.results(db, shape, gpu=gpu, status=OK), key=lambda r: r["time_ms"])[:n]
    configs = [config_of_row(r) for r in rows]
    return [Line(f"#{i + 1}", c, r, model_for(db, c, r, spec, arch)) for i, (c, r) in enumerate(zip(configs, rows))]


def cublas(db: sqlite_utils.Database, shape: tuple[int, int, int], gpu: str | None) -> dict[str, Any] | None:
    """The median of the cuBLAS baselines recorded for this shape (one per search that timed it)."""
    where, args = "M = ? AND N = ? AND K = ?", list(shape)
    if gpu:
        where += " AND (gpu_uuid = ? OR gpu_name = ?)"
        args += [gpu, gpu]
    rows = list(db.query(f"SELECT * FROM baselines WHERE {where}", args))
    if not rows:
        return None
    ms = statistics.median(r["time_ms"] for r in rows)
    return {"time_ms": ms, "tflops": tflops(*shape, ms), "count": len(rows), "library": rows[-1]["library"]}


def progress(db: sqlite_utils.Database, shape: tuple[int, int, int], gpu: str | None) -> dict[str, list]:
    """Per study: (trial number, TFLOP/s of that trial; 0 for anything not verified)."""
    sql = ("SELECT t.study, t.number, r.status, r.tflops FROM trials t JOIN results r ON r.id = t.result_id "
           "WHERE r.M = ? AND r.N = ? AND r.K = ?" + (" AND (r.gpu_uuid = ? OR r.gpu_name = ?)" if gpu else "")
           + " ORDER BY t.study, t.number")
    out: dict[str, list[tuple[int, float]]] = {}
    for r in db.query(sql, [*shape, *([gpu, gpu] if gpu else [])]):
        out.setdefault(r["study"], []).append((r["number"], r["tflops"] if r["status"] == OK else 0.0))
    return out


def build(db_path: str, shape: tuple[int, int, int], preset: str = "h200", gpu: str | None = None,
          arch: str = "sm_90") -> ReportData:
    """Everything the page and the plots show, read from a copy of the database."""
    with tempfile.TemporaryDirectory(prefix="autotune-report-") as tmp:
        db = open_copy(db_path, Path(tmp))
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
    top = ranked_lines(db, shape, gpu, spec, arch)
    return ReportData(shape, db_path, preset, spec, [g for g in gpus if g], ladder_lines(db, shape, gpu, spec, arch),
                      top[0] if top else None, top, cublas(db, shape, gpu), progress(db, shape, gpu))


def report_command(db_path: str, shape: tuple[int, int, int], output: str | None, preset: str,
                   gpu: str | None, arch: str = "sm_90") -> Path:
    data = build(db_path, shape, preset, gpu, arch)
    folder = Path(output or "report-{}x{}x{}".format(*shape))
    folder.mkdir(parents=True, exist_ok=True)
    write_plots(data, folder)
    return write_page(data, folder)
