"""Export a kernel as standalone CUDA source plus a JSON launch manifest, a C++ header with a host
launcher and a Python launcher (codegen.launcher), or (lang "hip") as HIP source translated from the
same render (codegen.hip) with a HIP header and the manifest; and the row that `best` shows and
`export` writes by default (find_best). Both only read the database.

The manifest says everything another program needs to launch the kernel: its name, the
signature, grid and block for the exported shape and the grid's formula for any shape, dynamic
shared memory (and whether it needs the opt-in above 48 KiB), the shape it was tuned at, and what
was measured (time, TFLOP/s, % of cuBLAS, GPU).
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Callable, NamedTuple

import sqlite_utils

from autotune import store
from autotune.backends.kinds import REGISTRY
from autotune.backends.outcome import OK
from autotune.codegen.hip import CHECK_ARCH, hip_source, wavefront
from autotune.codegen.launcher import Launchers, launchers, nvcc_arch, signature
from autotune.codegen.nvrtc import arch_specific
from autotune.codegen.render import render, sha256
from autotune.errors import AutotuneError, SpaceError
from autotune.families import config_of_row
from autotune.space import PROLOGUE_SUFFIX, Config, Launch, shape_text, shape_violations, takes_blas, violations
from autotune.space.formula import PrologueFormula

MEASURED = ("id", "M", "N", "K", "time_ms", "time_ms_min", "time_ms_max", "tflops", "pct_cublas", "pct_peak", "cublas_ms",
            "sm_clock_mhz", "gpu_name", "gpu_uuid", "arch", "nvrtc_version", "driver_version", "created_at")
# Above this a launch fails unless cudaFuncAttributeMaxDynamicSharedMemorySize was raised first.
SHARED_OPTIN_BYTES = 48 * 1024
LANGS = {"cuda": ".cu", "hip": ".hip"}  # the kernel file's suffix


# --------------------------------------------------------------------------- the best row

def check_gpu(db: sqlite_utils.Database, db_path: str, gpu: str) -> None:
    """A --gpu that matches no result's GPU name or UUID is a typo, not "nothing measured yet"."""
    known = store.gpus(db)
    if any(gpu in pair for pair in known):
        return
    names = sorted({name for name, _ in known if name})
    raise AutotuneError(f"no results on GPU {gpu!r} in {db_path}; its GPUs: {', '.join(names) or 'none'} "
                        f"(--gpu takes a GPU name or UUID)")


def find_best(db: sqlite_utils.Database, db_path: str, shape: tuple[int, int, int], backend: str = "cuda",
              gpu: str | None = None, family: str | None = None, precision: str | None = None) -> dict:
    """The fastest verified row of one backend (and GPU, family; of the families the contract
    `precision` admits, any with None). At a shape without one, the fastest at the nearest
    recorded shape (store.nearest) that is valid at this shape, said in one line on stderr; with
    none anywhere, a one-line error naming where it looked."""
    if gpu:
        check_gpu(db, db_path, gpu)
    row = store.best(db, shape, backend=backend, gpu=gpu, family=family, precision=precision)
    if row is not None:
        return row
    admitted = store.admitted_families(precision)
    row = nearest_best(db, shape, backend, gpu, family,
                       None if admitted is None else lambda config: config.family.name in admitted)
    if row is None:
        if precision == "fp32" and store.best(db, shape, backend=backend, gpu=gpu, family=family, precision="fp32-tc"):
            raise AutotuneError(f"no verified FP32 result for {shape_text(shape)} in {db_path}, only tensor-core "
                                f"ones (TF32 or INT8 parts): pass --precision fp32-tc (precision= in Python) for them")
        raise AutotuneError(nothing_found(db, db_path, shape, backend, gpu, family))
    where = f" on {gpu}" if gpu else ""
    print(f"autotune: no verified {family + ' ' if family else ''}result at {shape_text(shape)} from backend "
          f"{backend}{where}; nearest recorded shape {shape_text((row['M'], row['N'], row['K']))}: {row['kernel']}",
          file=sys.stderr, flush=True)
    return row


def nearest_best(db: sqlite_utils.Database, shape: tuple[int, int, int], backend: str, gpu: str | None,
                 family: str | None, keep: Callable[[Config], bool] | None = None) -> dict | None:
    """The fastest verified row at the nearest recorded shape whose config a constraint does not
    refuse at `shape` (under the default device limits: no device is asked); a shape all of whose
    rows are refused gives way to the next nearest. keep: which configs count (the dispatcher's
    transposes, signature and precision)."""
    for near in store.nearest_shapes(db, shape, backend, gpu):
        rows = sorted((r for r in store.results(db, near, backend, gpu, OK) if family in (None, r["family"])),
                      key=lambda r: r["time_ms"])
        for row in rows:
            try:
                config = config_of_row(row)
            except SpaceError:  # a family or parameter this version does not know
                continue
            if keep is not None and not keep(config):
                continue
            if not violations(config) and not shape_violations(config, shape[0], shape[1]):
                return row
    return None


def nothing_found(db: sqlite_utils.Database, db_path: str, shape: tuple[int, int, int], backend: str,
                  gpu: str | None, family: str | None) -> str:
    M, N, K = shape
    what = f"{family} result" if family else "result"
    where = f" on {gpu}" if gpu else ""
    search = f"autotune search --M {M} --N {N} --K {K}" + (f" --backend {backend}" if backend != "cuda" else "")
    kind = REGISTRY.get(backend)  # a recorded row's backend may be none of ours (a test's fake)
    if kind and kind.replays:
        search += " --replay-db DATASET"
    others = [b for b in store.backends_with_ok(db, shape) if b != backend]
    hint = f"it has some from backend {', '.join(others)} (pass --backend), or run `{search}`" if others \
        else f"run `{search}` first"
    return f"no verified {what} for {M}x{N}x{K} from backend {backend}{where} in {db_path}; {hint}"


# --------------------------------------------------------------------------- the export

class Exported(NamedTuple):
    source: Path  # best.cu (best.hip)
    manifest: Path  # best.json
    header: Path  # best.h
    launcher: Path | None  # best.py; None for HIP


def manifest(config: Config, launch: Launch, shape: tuple[int, int, int], source_hash: str,
             row: dict | None, kernel: str | None = None, grid_formula: dict | None = None,
             lang: str = "cuda", prologue: PrologueFormula | None = None) -> dict:
    """`kernel`: the name in the exported source (a stored source keeps the name it was rendered
    under, which for rows older than a parameter is not today's config.name). `grid_formula`: the
    grid for any M and N, `prologue` the prologue's launch as formulas (both codegen.launcher). `source_hash` is the CUDA source's, also for HIP:
    the code that was measured."""
    M, N, K = shape
    name = kernel or config.name
    optin = launch.shared_bytes > SHARED_OPTIN_BYTES
    rt = "hip" if lang == "hip" else "cuda"
    return {
        "lang": lang,
        "kernel": name,
        "family": config.family.name,
        "params": config.values,
        "signature": f'extern "C" __global__ void {name}{signature(config)}',
        "layout": ("row-major FP32, cuBLAS-style: C = alpha * op(A) * op(B) + beta * C with lda, ldb, ldc; batch z "
                   "(grid z) at A + z*strideA, B + z*strideB, C + z*strideC" if takes_blas(config.values)
                   else "row-major FP32: C[M,N] = A[M,K] * B[K,N]"),
        "shape": {"M": M, "N": N, "K": K},
        "tuned_shape": {k: row[k] for k in ("M", "N", "K")} if row else None,
        "grid": list(launch.grid),
        "grid_formula": grid_formula,
        "block": list(launch.block),
        "dynamic_shared_bytes": launch.shared_bytes,
        "needs_shared_optin": optin,
        "shared_optin": (f"{rt}FuncSetAttribute({name}, {rt}FuncAttributeMaxDynamicSharedMemorySize, "
                         f"{launch.shared_bytes}) once before the first launch" if optin else None),
        "prologue": prologue_entry(prologue, name),
        "source_hash": source_hash,
        "measured": {k: row.get(k) for k in MEASURED} if row else None,
        **({"hip": hip_entry(config)} if lang == "hip" else {}),
    }


def compile_target(arch_specific: bool, lang: str) -> str:
    """How the exported source is compiled, for the manifest."""
    if lang == "hip":
        return f"hipcc --offload-arch={CHECK_ARCH} (compile-checked), or your AMD GPU's"
    if arch_specific:
        return "sm_90a only (NVRTC -arch=sm_90a; nvcc: nvcc_flags): architecture-specific instructions (wgmma)"
    return "the GPU's own architecture (nvcc -arch=native; NVRTC -arch=sm_XY)"


def prologue_entry(pre: PrologueFormula | None, name: str) -> dict | None:
    """The launch before the kernel's own (space.Prologue), as the launchers run it; None: none."""
    if pre is None:
        return None
    return {"kernel": name + PROLOGUE_SUFFIX, "signature": "the kernel's, C being the workspace",
            "does": f"{pre.does}; the kernel is then passed the workspace as its B",
            "workspace_floats": pre.floats_python(), "grid": f"{pre.blocks_python()} x 1 x 1",
            "block": list(pre.block), "dynamic_shared_bytes": 0}


def hip_entry(config: Config) -> dict:
    return {
        "translated_from": "the CUDA source of source_hash (measured: its CUDA run on an NVIDIA GPU)",
        "wavefront": wavefront(config),
        "checked": f"compile-checked with hipcc for {CHECK_ARCH} in CI; not run on an AMD GPU",
    }


def export_command(db_path: str, shape: tuple[int, int, int], config: Config | None, output: str,
                   backend: str = "cuda", gpu: str | None = None, lang: str = "cuda",
                   precision: str | None = None, row_id: int | None = None) -> Exported:
    """Write the best kernel for the shape under the contract `precision` (or the named config, or the result
    row `row_id`: its stored source and its measurement), its manifest and launchers, in CUDA or (lang "hip")
    translated to HIP."""
    paths = output_paths(output, lang)  # a path that cannot be written is refused before anything is read
    # A named config needs no database: it only lends the config's measurement at this shape, if it has one.
    db = store.open_readonly(db_path) if config is None or gpu or Path(db_path).exists() else None
    row = None
    if row_id is not None:
        assert db is not None
        row = store.result_by_id(db, row_id)
        if row["status"] != OK:
            raise AutotuneError(f"result {row_id} is {row['status']} ({row['reason']}): only a verified row is "
                                f"exported with its measurement; name its config with --family and -p to export it")
        config = config_of_row(row)
    elif config is None:
        assert db is not None
        row = find_best(db, db_path, shape, backend, gpu, precision=precision)
        config = config_of_row(row)
    elif gpu:
        assert db is not None
        check_gpu(db, db_path, gpu)
    # The measured source as it was stored, not today's render of the config: the templates
    # evolve, and the numbers in the manifest belong to the code that was timed.
    source = store.source(db, row["source_hash"]) if row and db is not None else None
    if source is None:
        source = render(config)
        if row is not None and sha256(source) != row["source_hash"]:
            row = None  # not stored, and the template has changed since: export it unmeasured
    source_hash = row["source_hash"] if row else sha256(source)
    if row is None and db is not None:  # a named config: attach its measurement at this shape if there is one
        row = next((r for r in store.results(db, shape, backend, gpu, OK) if r["source_hash"] == source_hash), None)
    kernel = row["kernel"] if row else config.name
    launch = config.geometry(shape[0], shape[1])
    tuned = (row["M"], row["N"], row["K"]) if row else None
    if lang == "hip":
        source = hip_source(config, kernel, source, launch)
    specific = arch_specific(source)
    made = launchers(config, kernel, launch, shape, tuned, paths.source, lang, arch_specific=specific)
    info = {**manifest(config, launch, shape, source_hash, row, kernel, made.grid_formula, lang, made.prologue),
            "compile_for": compile_target(specific, lang),
            **({} if lang == "hip" else {"nvcc_flags": nvcc_arch(specific).split()})}
    return write_export(output, source, info, made, lang)


def output_paths(out: str, lang: str = "cuda") -> Exported:
    """The .cu (.hip) and beside it its .json, .h and (CUDA) .py, refused with one line unless all
    can be written."""
    path = Path(out)
    if lang not in LANGS:
        raise AutotuneError(f"unknown export language {lang!r}; choose from {', '.join(LANGS)}")
    beside = ".json, .h and .py" if lang == "cuda" else ".json and .h"
    if path.suffix != LANGS[lang]:
        raise AutotuneError(f"export file {out!r} must end in {LANGS[lang]} for --lang {lang} (the manifest and "
                            f"launchers go beside it as {beside})")
    folder = path.parent
    if not folder.exists():
        raise AutotuneError(f"export folder {str(folder)!r} does not exist; create it or choose another -o")
    if not folder.is_dir():
        raise AutotuneError(f"export folder {str(folder)!r} is a file, not a folder; choose another -o")
    paths = Exported(path, path.with_suffix(".json"), path.with_suffix(".h"),
                     path.with_suffix(".py") if lang == "cuda" else None)
    written = [p for p in paths if p is not None]
    for p in written:
        if p.is_dir():
            raise AutotuneError(f"cannot export to {str(p)!r}: it is a folder; choose another -o")
        if p.is_file() and not written_by_export(p):
            raise AutotuneError(f"{str(p)!r} exists and autotune export did not write it; it was left as it is: "
                                f"choose another -o (the export writes {beside} beside {path.name})")
    if not os.access(folder, os.W_OK | os.X_OK) or any(p.exists() and not os.access(p, os.W_OK) for p in written):
        raise AutotuneError(f"cannot write {str(path)!r} and its {beside} in {str(folder)!r}; "
                            f"choose another -o")
    return paths


def written_by_export(path: Path) -> bool:
    """Whether a file is an earlier export's, which an export may replace: a manifest (JSON with the kernel and
    its source hash), or a source or launcher whose first lines say autotune wrote it."""
    try:
        if path.suffix == ".json":
            info = json.loads(path.read_text())
            return isinstance(info, dict) and {"kernel", "source_hash"} <= set(info)
        with open(path, "rb") as f:
            head = f.read(400).decode("utf-8", "replace")
    except (OSError, ValueError):
        return False
    return head.startswith("// autotune kernel") or "autotune export" in head


def write_export(out: str, source: str, info: dict, made: Launchers, lang: str = "cuda") -> Exported:
    paths = output_paths(out, lang)
    try:
        paths.source.write_text(source)
        paths.manifest.write_text(json.dumps(info, indent=2) + "\n")
        paths.header.write_text(made.header)
        if paths.launcher is not None:
            paths.launcher.write_text(made.python)
    except OSError as exc:  # a full disk, or the folder changed since the check
        raise AutotuneError(f"cannot write the export {out!r}: {exc}; choose another -o") from None
    return paths
