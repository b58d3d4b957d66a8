"""The launchers an export writes beside the kernel's source: a C++ header (`best.h`: the kernel's
declaration, `<kernel>_grid` and `<kernel>_launch`) and a Python module (`best.py`: NVRTC and the
driver API through cuda-python alone). Both compute the grid for any M and N from the formula
derived from the family's own geometry (space.formula), so neither holds a hand-written copy;
where a family has none, both accept the exported shape only and say why. A HIP export gets the
same header written against the HIP runtime (lang="hip") and no Python launcher. A grid that reads
the device's SM count (streamk's) reads it from the GPU it launches on, once per device.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from autotune.codegen.hip import wavefront
from autotune.codegen.render import render_template
from autotune.space import BLAS_ARGS, Config, Launch, Limits, shape_text, takes_blas
from autotune.space.expr import emit
from autotune.space.formula import SMS, GridFormula, PrologueFormula, derive_formula, derive_prologue, grid_at

SHARED_OPTIN_BYTES = 48 * 1024  # above this a launch fails unless the attribute was raised first
SMS_ATTRIBUTE = {"cuda": "cudaDevAttrMultiProcessorCount", "hip": "hipDeviceAttributeMultiprocessorCount"}


@dataclass(frozen=True)
class Launchers:
    header: str  # best.h
    python: str  # best.py; empty for a HIP export
    grid_formula: dict  # the manifest's grid_formula
    prologue: PrologueFormula | None  # the prologue's grid and workspace, derived once for these and the manifest


def launchers(config: Config, kernel: str, launch: Launch, shape: tuple[int, int, int],
              tuned: tuple[int, int, int] | None, cu: Path, lang: str = "cuda",
              arch_specific: bool = False) -> Launchers:
    """The header and the Python launcher of `kernel` (the name in the source file `cu`), exported
    for `shape` with the grid `launch` (the family's geometry there), tuned at `tuned`; lang "hip":
    the header against the HIP runtime, and no Python launcher (it drives CUDA through NVRTC).
    arch_specific: the source needs the architecture-specific target (codegen.nvrtc.ARCH_SPECIFIC)."""
    formula, pre = derive_formula(config), derive_prologue(config)
    sms = isinstance(formula, GridFormula) and formula.reads_sms
    context = {
        "kernel": kernel, "cu": cu.name, "header": cu.with_suffix(".h").name, "module": cu.stem,
        "manifest": cu.with_suffix(".json").name, "family": config.family.name,
        "params": " ".join(f"{k}={v}" for k, v in config.params),
        "tuned": shape_text(tuned) if tuned else "no recorded shape (a named config never measured)",
        "shape_text": shape_text(shape), "M": shape[0], "N": shape[1], "grid": launch.grid, "block": launch.block,
        "grid_text": grid_text(config, shape) if sms else " x ".join(map(str, launch.grid)),
        "sms": sms, "sms_attribute": SMS_ATTRIBUTE[lang],
        "shared": launch.shared_bytes, "optin": launch.shared_bytes > SHARED_OPTIN_BYTES,
        "turnstiles": "MAX_TILES" in config.derived,
        "formula": isinstance(formula, GridFormula),
        "rule": isinstance(formula, GridFormula) and formula.accepts is not True, "reason": formula if isinstance(formula, str) else None,
        "rt": lang, "wavefront": f"warp width: {wavefront(config)}" if lang == "hip" else "",
        "blas": takes_blas(config.values), "signature": signature(config),
        "arguments": ", ".join(name for name, _ in (BLAS_ARGS if takes_blas(config.values) else BLAS_ARGS[:6])),
        "ta": bool(config.values.get("TA", 0)), "tb": bool(config.values.get("TB", 0)),
        "nvcc_arch": nvcc_arch(arch_specific), "arch_suffix": "a" if arch_specific else "",
        "helpers": "",  # functions the grid formula calls (tailsplit's pieces rule), defined before it
        **prologue_context(pre),
    }
    if isinstance(formula, GridFormula):
        c, py = formula.grid_c(), formula.grid_python()
        header = render_template("launch.h.j2", **{**context, "helpers": formula.helpers_c()}, gx=c[0], gy=c[1], gz=c[2],
                                 accepts=formula.accepts_c())
        python = "" if lang == "hip" else render_template(
            "launch.py.j2", **{**context, "helpers": formula.helpers_python()}, gx=py[0], gy=py[1], gz=py[2],
            accepts=formula.accepts_python(), accepts_text=formula.accepts_python().replace("{", "{{").replace("}", "}}"))
        return Launchers(header, python, formula_entry(formula), pre)
    header = render_template("launch.h.j2", **context)
    python = "" if lang == "hip" else render_template("launch.py.j2", **context)
    return Launchers(header, python, {"variables": None, "c": None, "python": None, "accepts_c": None,
                                      "accepts_python": None, "helpers_c": None, "helpers_python": None, "fallback": f"{formula}; the launchers accept "
                                      f"{shape[0]}x{shape[1]} (any K) only"}, pre)


def nvcc_arch(arch_specific: bool) -> str:
    """nvcc's target option for the exported source: the GPU's own, or sm_90a alone for wgmma (only sm_90
    has it; nvcc 13's -arch=sm_90a also emits compute_90 PTX, which cannot hold wgmma)."""
    return "-gencode arch=compute_90a,code=sm_90a" if arch_specific else "-arch=native"


def prologue_context(pre: PrologueFormula | None) -> dict:
    """What the launchers need of a prologue (space.Prologue): its grid and workspace as formulas of
    M, N and K, its block, and what it does."""
    if pre is None:
        return {"pre": False}
    return {"pre": True, "pre_block": pre.block, "pre_does": pre.does, "pre_blocks_c": pre.blocks_c(),
            "pre_floats_c": pre.floats_c(), "pre_blocks_py": pre.blocks_python(), "pre_floats_py": pre.floats_python()}


def signature(config: Config) -> str:
    """The kernel's parameter list: (A, B, C, M, N, K), or with BLAS=1 the cuBLAS-style one (space.blas)."""
    args = BLAS_ARGS if takes_blas(config.values) else BLAS_ARGS[:6]
    return "(" + ", ".join(f"{ctype} {name}" for name, ctype in args) + ")"


def grid_text(config: Config, shape: tuple[int, int, int]) -> str:
    """The exported shape's grid with the SM count a name, for the launchers' comments: "(2 * sms) x 1 x 1"."""
    return " x ".join(emit(g, "python") for g in grid_at(config, shape[0], shape[1]))


def formula_entry(formula: GridFormula) -> dict:
    device = (f"; {SMS}: the SM count of the device launched on, which the launchers read from it at run time "
              f"(`grid`, the exported shape's, is for {Limits().sms} SMs)") if formula.reads_sms else ""
    return {
        "variables": f"M, N: rows and columns of C{device} (C: 64-bit integer arithmetic; every value non-negative)",
        "c": formula.grid_c(), "python": formula.grid_python(),
        "accepts_c": formula.accepts_c(), "accepts_python": formula.accepts_python(),
        "helpers_c": formula.helpers_c() or None, "helpers_python": formula.helpers_python() or None,
        "fallback": None,
    }
