"""`autotune report`: what the searches in a database did, a section per shape searched: their
progress, the families tried, the ladder of each family's best, the model's ceilings against the
measured times of the fastest rows, and, where the tiled family was measured, the chapter's
flat-in-T study of the shared-memory ceiling.

Everything here reads the database and compiles kernels; nothing needs a GPU. The
device spec is a named preset (by default the one of the GPU the rows were measured on, h200 where
none names it: explain.model.preset_for), stated in the report, so a database copied off a GPU host
gives the same page anywhere. Rows measured before the model
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
from autotune.backends.outcome import OK, per_watt, tflops
from autotune.codegen.nvrtc import check_arch
from autotune.codegen.render import render, sha256
from autotune.errors import AutotuneError
from autotune.explain import counts as ex
from autotune.explain import require_matplotlib
from autotune.explain.ladder import Line, ReportData
from autotune.explain.model import PRESETS, DeviceSpec, preset_for
from autotune.explain.page import write_page
from autotune.explain.tally import Dims, FamilyTally, improvements, progress, searched, tallies, trial_rows
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
Key = tuple[str, tuple[int, int, int]]  # (backend, shape): one section of the report
NO_COUNTS = ("no SASS counts: none are stored with the row and nvdisasm is not installed here "
             "(pip install 'sgemm-autotune[sass]')")


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


def explained(db: sqlite_utils.Database, config: Config, row: dict[str, Any] | None, spec: DeviceSpec, arch: str,
              memo: Memo) -> tuple[dict[str, Any], str]:
    """The model columns, or none and why: the model is commentary, so a kernel it cannot read keeps its row."""
    try:
        model = model_for(db, config, row, spec, arch, memo)
    except Exception as exc:  # a source that no longer compiles, a family the model does not cover
        return {}, f"no model: {exc}".splitlines()[0]
    return model, "" if model else NO_COUNTS


def measured_row(db: sqlite_utils.Database, key: Key, gpu: str | None, config: Config) -> dict[str, Any] | None:
    """The latest row of this kernel at this shape that got past the constraints."""
    rows = [r for r in store.results(db, key[1], key[0], gpu) if r["kernel"] == config.name and r["status"] != "invalid"]
    return rows[-1] if rows else None


def measure_command(shape: tuple[int, int, int], family: str, params: dict[str, Any]) -> str:
    M, N, K = shape
    ps = " ".join(f"-p {k}={v}" for k, v in params.items())
    return f"autotune measure --M {M} --N {N} --K {K} --family {family} {ps}"


def ladder_lines(db: sqlite_utils.Database, key: Key, gpu: str | None, spec: DeviceSpec,
                 arch: str, memo: Memo) -> list[Line]:
    """The chapter's ladder (naive, then tiled against T) at this shape, measured or not."""
    out = []
    for label, family, params in LADDER:
        config = make_config(FAMILIES[family], params)
        row = measured_row(db, key, gpu, config)
        model, why = explained(db, config, row, spec, arch, memo)
        out.append(Line(label, config, row, model, "" if row else measure_command(key[1], family, params), why))
    return out


def ranked_lines(db: sqlite_utils.Database, rows: list[dict[str, Any]], spec: DeviceSpec, arch: str, memo: Memo,
                 n: int = 10) -> list[Line]:
    """The n fastest verified rows; the first is store.best()."""
    ranked = sorted((r for r in rows if r["status"] == OK), key=lambda r: r["time_ms"])[:n]
    return [_line(db, f"#{i + 1}", r, spec, arch, memo) for i, r in enumerate(ranked)]


def family_steps(db: sqlite_utils.Database, families: list[FamilyTally], spec: DeviceSpec, arch: str,
                 memo: Memo) -> list[Line]:
    """The search's ladder: each family's fastest verified row, slowest family first."""
    best = sorted((t.best for t in families if t.best), key=lambda r: -r["time_ms"])
    return [_line(db, r["family"], r, spec, arch, memo) for r in best]


def _line(db: sqlite_utils.Database, label: str, row: dict[str, Any], spec: DeviceSpec, arch: str, memo: Memo) -> Line:
    config = config_of_row(row)
    model, why = explained(db, config, row, spec, arch, memo)
    return Line(label, config, row, model, why=why)


def cublas(db: sqlite_utils.Database, shape: tuple[int, int, int], gpu: str | None) -> dict[str, Any] | None:
    """The median of the cuBLAS baselines recorded for this shape (one per search that timed it), and of
    their watts where the power was read."""
    rows = store.baselines(db, shape, gpu)
    if not rows:
        return None
    ms = statistics.median(r["time_ms"] for r in rows)
    powered = [r["watts"] for r in rows if r.get("watts")]  # none where NVML was not read, or before the column
    watts = statistics.median(powered) if powered else None
    return {"time_ms": ms, "tflops": tflops(*shape, ms), "count": len(rows), "library": rows[-1]["library"],
            "watts": watts, "gflops_per_watt": per_watt(tflops(*shape, ms), watts)}


def build(db_path: str, shape: tuple[int, int, int], preset: str | None = None, gpu: str | None = None,
          arch: str = "sm_90", backend: str = "cuda") -> ReportData:
    """One shape's section, read from the database opened read-only."""
    db = store.open_readonly(db_path)
    try:
        return _gather(db, db_path, (backend, shape), preset, gpu, arch)
    finally:
        db.conn.close()


def build_all(db_path: str, dims: Dims, preset: str | None = None, gpu: str | None = None,
              arch: str = "sm_90") -> list[ReportData]:
    """A section per shape searched (per backend) that matches the given dims (M, N, K; None: any)."""
    db = store.open_readonly(db_path)
    try:
        shapes = searched(db, dims, gpu)
        if not shapes:
            raise AutotuneError(_nothing_to_report(db, db_path, dims, gpu))
        return [_gather(db, db_path, (s.backend, s.shape), preset, gpu, arch) for s in shapes]
    finally:
        db.conn.close()


def _nothing_to_report(db: sqlite_utils.Database, db_path: str, dims: Dims, gpu: str | None) -> str:
    if not searched(db, (None, None, None)):
        return f"no results in {db_path}; run `autotune search --M ...` on a GPU host first, then report its --db"
    wanted = ", ".join(f"{name}={v}" for name, v in zip("MNK", dims) if v is not None) or "any shape"
    shapes = ", ".join(sorted({s.label for s in searched(db, (None, None, None))})[:8])
    return f"no results for {wanted}{' on ' + gpu if gpu else ''} in {db_path}; its shapes: {shapes}"


def _gather(db: sqlite_utils.Database, db_path: str, key: Key, preset: str | None, gpu: str | None,
            arch: str) -> ReportData:
    backend, shape = key
    rows = list(store.results(db, shape, backend, gpu))
    if not rows:
        M, N, K = shape
        raise AutotuneError(f"no results for {M}x{N}x{K}{' on ' + gpu if gpu else ''} in {db_path}; "
                            f"run `autotune search --M {M} --N {N} --K {K}` on a GPU host first")
    models = sorted({r["gpu_name"] for r in rows if r["gpu_name"]})
    preset = preset or preset_for(models[0] if len(models) == 1 else None)  # rows of several models: the default
    spec = PRESETS[preset]
    memo: Memo = {}
    top, families, trials = ranked_lines(db, rows, spec, arch, memo), tallies(rows), trial_rows(db, backend, shape, gpu)
    tiled = any(r["family"] == TILED.name for r in rows)  # the flat-in-T study needs tiled rows at this shape
    return ReportData(shape, db_path, preset, spec, models,
                      ladder_lines(db, key, gpu, spec, arch, memo) if tiled else [],
                      replace(top[0], label="best found (search)") if top else None, top, cublas(db, shape, gpu),
                      progress(trials), store.profiles(db, shape, gpu), backend, families,
                      family_steps(db, families, spec, arch, memo), improvements(trials))


def report_command(db_path: str, dims: Dims, output: str | None, preset: str | None, gpu: str | None,
                   arch: str = "sm_90") -> Path:
    """Write report.md and its PNGs for every shape searched in db_path that matches dims; the page's path."""
    if preset is not None and preset not in PRESETS:  # the command line offers only these; the Python API is told the same way
        raise AutotuneError(f"unknown device preset {preset!r}; choose from {', '.join(sorted(PRESETS))}")
    folder = Path(output or f"report-{Path(db_path).stem}")
    check_folder(folder)  # before the database is read: a bad -o costs nothing
    check_arch(arch)
    require_matplotlib("autotune report")
    sections = build_all(db_path, dims, preset, gpu, arch)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        from autotune.explain.plots import write_plots  # matplotlib (0.2 s) only for a report, not for suite or cover

        for data in sections:
            write_plots(data, folder)
        return write_page(sections, folder)
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
