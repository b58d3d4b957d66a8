"""`autotune profile`: one kernel at one shape under Nsight Compute, its counters beside the
model's prediction, stored in the results database (store.profiles) and printed as a table.

The kernel is a named config, a result row (--id), or the best verified row for the shape. Its
source is the one stored with the row (the code that was timed), else today's render. A tiny
runner script (backends.cuda.runner) compiles and launches it at the shape with random inputs;
ncu profiles the launch after the warm-up ones (explain.ncu).
"""
from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from autotune import store
from autotune.api.export import find_best
from autotune.codegen.render import render, sha256
from autotune.errors import NoDeviceError
from autotune.explain import counts as ex
from autotune.explain import ncu
from autotune.explain.model import spec_for
from autotune.explain.profile import format_profile, modelled
from autotune.families import config_of_row
from autotune.space import PROLOGUE_SUFFIX, Config

WARMUP = 1  # launches before the profiled one: the module loaded, the clocks up
SEED = 0
RUNNER = '''"""Launches {kernel} at {shape} for `autotune profile` (run under Nsight Compute)."""
import sys

sys.path.insert(0, {root!r})
from autotune.backends.cuda.runner import main  # noqa: E402

sys.exit(main({spec!r}))
'''


def target(db_path: str, shape: tuple[int, int, int], config: Config | None, result_id: int | None,
           backend: str, gpu: str | None, precision: str = "fp32") -> tuple[Config, dict[str, Any] | None, str, str]:
    """(config, its result row or None, source, kernel name): the named config, the row --id names, or the best
    row of the families the contract `precision` admits. A stored source keeps the name it was rendered under."""
    if config is not None and result_id is None:
        return config, None, render(config), config.name
    db = store.open_readonly(db_path)
    row = (store.result_by_id(db, result_id) if result_id is not None
           else find_best(db, db_path, shape, backend, gpu, precision=precision))
    source = store.source(db, row["source_hash"])
    db.conn.close()
    config = config_of_row(row)
    return (config, row, source, row["kernel"]) if source is not None else (config, row, render(config), config.name)


def check_device(device: int) -> None:
    from autotune.backends.cuda.device import no_device_reason

    reason = no_device_reason()
    if reason is not None:
        raise NoDeviceError(f"{reason}: `autotune profile` runs the kernel on a GPU under Nsight Compute; "
                            f"run it on a GPU host (`autotune sass` counts a kernel's SASS without one)")


def gpu_facts(device: int) -> dict[str, Any]:
    from autotune.backends.cuda.device import device_info

    info = device_info(device)
    return {"gpu_name": info.name, "gpu_uuid": info.uuid, "arch": info.arch}


def write_runner(folder: Path, config: Config, kernel: str, source: str, shape: tuple[int, int, int],
                 device: int) -> Path:
    (folder / "kernel.cu").write_text(source)
    spec = {"source": str(folder / "kernel.cu"), "kernel": kernel, "family": config.family.name,
            "params": config.values, "shape": list(shape), "device": device, "seed": SEED, "launches": WARMUP + 1}
    (folder / "spec.json").write_text(json.dumps(spec, indent=1))
    root = str(Path(__file__).resolve().parents[2])  # the checkout or site-packages that holds this autotune
    runner = folder / "runner.py"
    runner.write_text(RUNNER.format(kernel=kernel, shape="x".join(map(str, shape)), root=root,
                                    spec=str(folder / "spec.json")))
    return runner


def measure(ncu_path: str, config: Config, kernel: str, source: str, shape: tuple[int, int, int],
            device: int) -> ncu.NcuProfile:
    with tempfile.TemporaryDirectory(prefix="autotune-profile-") as tmp:
        runner = write_runner(Path(tmp), config, kernel, source, shape, device)
        out = ncu.run(ncu.command(ncu_path, kernel, WARMUP, [sys.executable, str(runner)]), cwd=tmp)
    return ncu.parse_raw_csv(out, kernel)


def model_of(config: Config, source: str, arch: str, gpu: str | None = None) -> dict[str, Any]:
    """Counts and model columns (the GPU's preset, else h200, like the search's rows); {} where they cannot be made."""
    try:
        return ex.explain(config, arch, spec_for(gpu), None, source, save=False)
    except Exception as exc:  # the model is commentary: the measurement stands without it
        print(f"autotune: no SASS model for {config.name}: {exc}", file=sys.stderr)
        return {}


def profile_command(db_path: str, shape: tuple[int, int, int], config: Config | None, result_id: int | None,
                    backend: str = "cuda", gpu: str | None = None, device: int = 0, precision: str = "fp32") -> str:
    """Profile, store and format. Every environment fault is one line before anything is written."""
    store.check_path(db_path)
    config, row, source, kernel = target(db_path, shape, config, result_id, backend, gpu, precision)
    check_device(device)  # no GPU first: ncu alone would not make a profile possible
    ncu_path = ncu.find_ncu()
    measured = measure(ncu_path, config, kernel, source, shape, device)
    facts = gpu_facts(device)
    M, N, K = shape
    profile = {"result_id": row["id"] if row else None, "kernel": kernel, "family": config.family.name,
               "source_hash": sha256(source), "M": M, "N": N, "K": K, **facts, **measured.columns(),
               **modelled(config, shape, model_of(config, source, facts["arch"], facts["gpu_name"]))}
    text = format_profile(store.insert_profile(store.open_db(db_path), profile))
    if config.prologue(M, N, K) is not None:  # ncu profiles one kernel by name: the product's
        text += (f"\n(only the product is profiled: its prologue {kernel}{PROLOGUE_SUFFIX}, which transposes B first, "
                 f"is not, while a result row's time includes it)")
    return text
