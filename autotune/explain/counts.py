"""Explain a kernel: its SASS counts and the ceiling model, as flat database columns.

`explain()` is what the results rows and the report use; `sass_command()` is what
`autotune sass` prints. The counts depend only on the source and the architecture, so
they are analysed once and kept in the `kernels` table (one row per source hash and
arch); the model columns depend on the device spec too and are recomputed, which is
cheap. Without nvdisasm, explain() returns {}: a search never fails because of the model.
"""
from __future__ import annotations

import math
import sys
from typing import Any

import sqlite_utils

from autotune import store
from autotune.backends.outcome import COMPILE_ERROR, INVALID, LAUNCH_ERROR, OK
from autotune.codegen.nvrtc import check_arch
from autotune.codegen.render import render, sha256
from autotune.errors import AutotuneError
from autotune.explain.model import DEFAULT_PRESET, PRESETS, DeviceSpec, Prediction, predict, spec_for
from autotune.explain.sass import SassCounts, SassReport, analyze_source, find_nvdisasm
from autotune.space import Config

DEFAULT_SPEC = PRESETS[DEFAULT_PRESET]
# predict() reads only the block and dynamic shared memory of a launch, never the grid,
# so any shape gives the same occupancy; this one is merely large enough for every config.
_NOMINAL = 4096

COUNT_COLUMNS = ("ffma", "lds32", "lds64", "lds128", "ldg32", "ldg64", "ldg128", "sts", "bar", "ldl", "stl",
                 "lds_per_ffma", "sass_regs", "spills", "frame_bytes", "static_shared", "sass_scope", "hmma",
                 "hgmma", "hgmma_n", "imma", "igmma", "igmma_n")
MODEL_COLUMNS = ("ceil_fma", "ceil_shared", "ceil_global", "wavefronts_per_ffma", "occupancy", "occupancy_limit",
                 "predicted_tflops", "binding", "model_device")


# --------------------------------------------------------------------------- counts

def _by_width(widths: dict[int, int]) -> dict[int, int]:
    """Fold sub-word accesses into 32 bits: SGEMM kernels move floats, so 8/16 bits are rare."""
    out = {32: 0, 64: 0, 128: 0}
    for bits, n in widths.items():
        out[max(bits, 32)] = out.get(max(bits, 32), 0) + n
    return out


def count_columns(report: SassReport) -> dict[str, Any]:
    """The hot loop's counts (what sets the ratios) and the whole kernel's resources."""
    c, res = report.loop, report.resources
    lds, ldg = _by_width(c.lds), _by_width(c.ldg)
    return {
        "ffma": c.ffma, "lds32": lds[32], "lds64": lds[64], "lds128": lds[128],
        "ldg32": ldg[32], "ldg64": ldg[64], "ldg128": ldg[128], "sts": sum(c.sts.values()), "bar": c.bar,
        "ldl": res.ldl, "stl": res.stl,  # whole kernel: a spill outside the loop still counts
        "lds_per_ffma": c.lds_per_ffma if c.ffma else None,
        "sass_regs": res.registers, "spills": int(res.spills), "frame_bytes": res.frame_bytes,
        "static_shared": res.static_shared, "sass_scope": c.scope, "hmma": c.hmma,
        "hgmma": c.hgmma, "hgmma_n": c.hgmma_n, "imma": c.imma, "igmma": c.igmma, "igmma_n": c.igmma_n,
    }


def counts_from_columns(row: dict[str, Any]) -> SassCounts:
    """Rebuild what the model reads (FFMA, shared loads by width) from a kernels row."""
    lds = {bits: row[f"lds{bits}"] for bits in (32, 64, 128) if row.get(f"lds{bits}")}
    ldg = {bits: row[f"ldg{bits}"] for bits in (32, 64, 128) if row.get(f"ldg{bits}")}
    return SassCounts(scope=row.get("sass_scope") or "loop", ffma=row["ffma"], lds=lds, ldg=ldg,
                      sts={32: row.get("sts") or 0}, bar=row.get("bar") or 0, hmma=row.get("hmma") or 0,
                      hgmma=row.get("hgmma") or 0, hgmma_n=row.get("hgmma_n") or 0, imma=row.get("imma") or 0,
                      igmma=row.get("igmma") or 0, igmma_n=row.get("igmma_n") or 0)


def _cached(db: sqlite_utils.Database | None, source_hash: str, arch: str) -> dict[str, Any] | None:
    if db is None or "kernels" not in db.table_names():
        return None
    rows = list(db.query("SELECT * FROM kernels WHERE source_hash = ? AND arch = ?", [source_hash, arch]))
    return rows[0] if rows else None


def kernel_counts(config: Config, source: str, arch: str, db: sqlite_utils.Database | None = None,
                  save: bool = True) -> dict[str, Any]:
    """SASS count columns of one source, from the kernels table or freshly analysed (and saved)."""
    source_hash = sha256(source)
    hit = _cached(db, source_hash, arch)
    if hit:
        return {k: hit.get(k) for k in COUNT_COLUMNS}  # a row from before a column was added has none
    counts = count_columns(analyze_source(config, source, arch))
    if db is not None and save:
        save_counts(db, config, source, arch, counts)
    return counts


def save_counts(db: sqlite_utils.Database, config: Config, source: str, arch: str, counts: dict[str, Any]) -> None:
    """One kernels row per (source, arch): upsert, so re-analysing a kernel replaces its row."""
    db.table("kernels").upsert({"source_hash": sha256(source), "arch": arch, "kernel": config.name,
                               "family": config.family.name, **counts, "created_at": store.now()},
                              pk=("source_hash", "arch"), alter=True)


# --------------------------------------------------------------------------- model

def prediction(config: Config, counts: dict[str, Any], spec: DeviceSpec) -> Prediction:
    launch = config.geometry(_NOMINAL, _NOMINAL)
    return predict(spec, counts_from_columns(counts), launch, counts["sass_regs"], counts["static_shared"], config)


def model_columns(config: Config, counts: dict[str, Any], spec: DeviceSpec) -> dict[str, Any]:
    """Ceilings in TFLOP/s; an infinite ceiling (no shared loads) is stored as NULL."""
    p = prediction(config, counts, spec)
    return {
        "ceil_fma": p.fma_ceiling, "ceil_shared": p.shared_ceiling if math.isfinite(p.shared_ceiling) else None,
        "ceil_global": p.global_ceiling, "wavefronts_per_ffma": p.wavefronts_per_ffma,
        "occupancy": p.occupancy.warps_per_sm,
        "occupancy_limit": p.occupancy.limited_by, "predicted_tflops": p.predicted, "binding": p.binding,
        "model_device": spec.name,
    }


def have_nvdisasm() -> bool:
    try:
        find_nvdisasm()
        return True
    except AutotuneError:
        return False


def explain(config: Config, arch: str = "sm_90", spec: DeviceSpec | None = None,
            db: sqlite_utils.Database | None = None, source: str | None = None,
            save: bool = True) -> dict[str, Any]:
    """Count and model columns for one config (source: what was measured; default: rendered now).

    {} when nvdisasm is not installed. A config that does not compile raises AutotuneError.
    """
    if not have_nvdisasm():
        return {}
    source = render(config) if source is None else source
    counts = kernel_counts(config, source, arch, db, save)
    return {**counts, **model_columns(config, counts, spec or DEFAULT_SPEC)}


def measured_over_ceiling(row: dict[str, Any]) -> dict[str, Any]:
    """How close an ok row came to its predicted ceiling (empty when either is missing)."""
    if row.get("status") != OK or not row.get("tflops") or not row.get("predicted_tflops"):
        return {}
    return {"measured_over_ceiling": row["tflops"] / row["predicted_tflops"]}


def wants_counts(backend: Any) -> bool:
    """Whether rows of this backend get SASS counts (nvdisasm installed, and the backend explains)."""
    return backend.explain and have_nvdisasm()


def has_counts(db: sqlite_utils.Database, source: str, arch: str) -> bool:
    return _cached(db, sha256(source), arch) is not None


def for_result(db: sqlite_utils.Database, backend: Any, config: Config, source: str, status: str,
               counts: dict[str, Any] | None = None) -> dict[str, Any]:
    """Explain columns for a results row: only for code that compiled, never an exception.
    `counts`: made ahead by the search's compile processes (pipeline.py); saved here, once,
    so that only the search process writes the kernels table. Without them the counts are
    read from that table or, failing that, analysed now."""
    if status in (INVALID, COMPILE_ERROR, LAUNCH_ERROR) or not backend.explain:
        return {}
    provenance = backend.provenance
    arch = provenance.get("arch") or "sm_90"
    spec = spec_for(provenance.get("gpu_name"))  # the GPU's preset where one names it, else h200
    try:
        if counts is not None:
            save_counts(db, config, source, arch, counts)
            return {**counts, **model_columns(config, counts, spec)}
        return explain(config, arch, spec, db, source)
    except Exception as exc:  # the model is commentary: a failure here must never stop a search
        print(f"autotune: no SASS model for {config.name}: {exc}", file=sys.stderr)
        return {}


# --------------------------------------------------------------------------- the sass command

def format_counts(report: SassReport, model: dict[str, Any]) -> str:
    c, res = report.loop, report.resources
    lds = c.lds_named()
    ldg = {("LDG" if b <= 32 else f"LDG.{b}"): n for b, n in sorted(c.ldg.items())}
    where = "hot loop" if c.scope == "loop" else "whole kernel (no loop with FFMA)"
    ratio = f"{c.lds_per_ffma:.3g}" if c.ffma else "n/a"
    lines = [
        f"{report.kernel}  ({report.arch}, counts of the {where})",
        f"  FFMA {c.ffma}   " + "  ".join(f"{k} {lds.get(k, 0)}" for k in ("LDS", "LDS.64", "LDS.128"))
        + f"   shared loads per FFMA {ratio}",
        "  global loads " + (", ".join(f"{k} {n}" for k, n in ldg.items()) or "none")
        + f"   STS {sum(c.sts.values())}   BAR {c.bar}",
        f"  registers {res.registers}, spills {'yes' if res.spills else 'none'} (frame {res.frame_bytes} B, "
        f"LDL {res.ldl}, STL {res.stl}), static shared {res.static_shared} B",
        f"  instructions {c.instructions} in the {where}, {report.whole.instructions} in the whole kernel",
    ]
    if c.hmma:
        lines.insert(2, f"  tensor cores: HMMA {c.hmma}   LDGSTS {c.ldgsts}   LOP3 {c.lop3} (TF32 conversions)   "
                        f"shared loads per HMMA {c.shared_loads / c.hmma:.3g}")
    if c.hgmma:
        lines.insert(2, f"  tensor cores: HGMMA.64x{c.hgmma_n}x8 {c.hgmma} (warpgroup MMAs, operands from shared memory)   "
                        f"LDGSTS {c.ldgsts}")
    if c.imma:
        lines.insert(2, f"  tensor cores: IMMA {c.imma} (INT8 m16n8k32)   LDGSTS {c.ldgsts}   "
                        f"shared loads per IMMA {c.shared_loads / c.imma:.3g}")
    if c.igmma:
        lines.insert(2, f"  tensor cores: IGMMA.64x{c.igmma_n}x32 {c.igmma} (INT8 warpgroup MMAs, operands from shared "
                        f"memory)   LDGSTS {c.ldgsts}")
    if model:
        shared = f"{model['ceil_shared']:.2f}" if model["ceil_shared"] is not None else "none (no shared loads)"
        lines.append(f"  model ({model['model_device']}): FMA {model['ceil_fma']:.2f}, shared {shared}, "
                     f"global {model['ceil_global']:.2f} TFLOP/s; occupancy {model['occupancy']} warps/SM "
                     f"({model['occupancy_limit']}); predicted {model['predicted_tflops']:.2f} TFLOP/s "
                     f"({model['binding']}-bound)")
    return "\n".join(lines)


def sass_command(config: Config, arch: str, preset: str, full: bool = False) -> str:
    """Compile, disassemble and count one config. Nothing is stored: `sass` only reads the
    results database (for --id), which may be a committed dataset or a read-only file."""
    find_nvdisasm()  # a missing tool is an error here, with the install hint
    check_arch(arch)
    report = analyze_source(config, render(config), arch)
    counts = count_columns(report)
    text = format_counts(report, model_columns(config, counts, PRESETS[preset]))
    return report.sass + "\n" + text if full else text
