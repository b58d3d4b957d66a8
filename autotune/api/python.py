"""The Python API: tune a shape, read the best kernel, and multiply with it. The command line's
`search` and `best` call these same functions. Re-exported by the package, lazily:
`autotune.tune` (this module's `search`: `autotune.search` is the search layer's package),
`autotune.best`, `autotune.load` and `autotune.report`.

    import autotune
    result = autotune.tune(4096)            # autotune search --M 4096; result.best, .status
    row = autotune.best(4096)               # autotune best --M 4096
    mm = autotune.load()                    # the best recorded kernel per GPU model and shape
    C = mm(A, B)                            # torch / CuPy / any DLPack or CUDA-array-interface arrays
"""
from __future__ import annotations

import operator
import os
from pathlib import Path
from typing import Any, Sequence

from autotune import store
from autotune.api import commands
from autotune.api.checks import check_search
from autotune.api.dispatch import Dispatcher
from autotune.api.export import find_best
from autotune.api.firstuse.attach import attach, tuning_db
from autotune.api.firstuse.tuner import Budget
from autotune.api.matmul import Launcher, Matmul
from autotune.api.result import TuneResult
from autotune.backends.kinds import backend_kind
from autotune.backends.spawn import leave_if_reimporting_main
from autotune.errors import AutotuneError
from autotune.families import FAMILIES, families_for
from autotune.families.layouts import for_batch, layout_choices, narrow_to
from autotune.space import Family, Shape, check_shape


def default_db() -> str:
    """AUTOTUNE_DB, else db/autotune.sqlite (relative to the working folder), as on the command line."""
    return store.default_path()


def shape_of(M: int, N: int | None = None, K: int | None = None) -> Shape:
    """N and K default to M (a square problem); refused with one line when out of range."""
    shape: Shape = (_whole(M), _whole(M if N is None else N), _whole(M if K is None else K))
    check_shape(*shape)
    return shape


def _whole(value: Any) -> Any:
    """numpy's integers (np.int64(4096)) as the ints they are; anything else as given, for the caller's check."""
    if isinstance(value, (int, float)):  # a bool stays a bool: refused
        return value
    try:
        return operator.index(value)
    except TypeError:
        return value


def _check_gpu(gpu: object, none_means: str, call: str = "") -> None:
    """A GPU's name or UUID, or None (which means `none_means`): what the command line's --gpu always is."""
    if gpu is not None and not isinstance(gpu, str):
        raise AutotuneError(f"{call}gpu={gpu!r}{')' if call else ''}: pass a GPU's name or UUID as a str (e.g. "
                            f"\"NVIDIA H200\"), or None for {none_means}")


def families_of(family: str | Sequence[str | Family] | None, precision: str = "fp32") -> list[Family]:
    """The families named; by default those of the accuracy contract (a tensor-core family only under fp32-tc)."""
    if family is not None and not isinstance(family, (str, list, tuple)):
        raise AutotuneError(f"family={family!r}: pass family names, comma-separated (\"blocked,splitk\") or as a list")
    if family is not None and not family:
        raise AutotuneError(f"family={family!r} names no family; pass None for the default ones")
    default = families_for(precision)  # an unknown precision is one line, family given or not
    names = family.split(",") if isinstance(family, str) else list(family or default)
    out = []
    for f in names:
        if isinstance(f, Family):
            out.append(f)
        elif isinstance(f, str) and f.strip() in FAMILIES:
            out.append(FAMILIES[f.strip()])
        else:
            raise AutotuneError(f"unknown family {f!r}; known: {', '.join(FAMILIES)}")
    return out


def tune(M: int, N: int | None = None, K: int | None = None, *,
         family: str | Sequence[str | Family] | None = None, db: str | None = None, sampler: str = "tpe-mv",
         trials: int = 60, timeout: float | None = None, seed: int = 0, backend: str = "cuda",
         devices: tuple[int, ...] | None = None, workers: int | None = None, storage: str | None = None,
         study: str | None = None, kernel_timeout: float | None = None, replay_db: str | None = None,
         compile_jobs: int | None = None, remeasure: str | None = None, layout: str | None = None,
         batch: int = 1, precision: str = "fp32") -> TuneResult:
    """Search kernels for the shape and record every result in `db` (`autotune search`; the
    options are the command's; layout "NT" searches kernels for mm(A, B, trans_b=True), as --layout;
    batch > 1 measures strided batches of that many products with BLAS=1 kernels, as --batch; precision "fp32-tc"
    adds the tensor-core families to the default ones, as --precision). Prints the summary;
    returns a TuneResult: the fastest verified row of its trials (.best), the counts (.trials, .new, .statuses),
    the seconds taken and the exit status (.status: 0 when it ran to its end, 128 + the signal's number when
    a signal (Ctrl-C) stopped it). Bad input or a broken
    environment raises AutotuneError before anything is measured."""
    leave_if_reimporting_main()  # a script without a main guard, re-imported by the worker it spawns
    # first: the families' narrowing (batch, layout) below would otherwise answer a bad value its own way
    check_search(study, storage, trials=trials, timeout=timeout, seed=seed, sampler=sampler, backend=backend,
                 workers=workers, kernel_timeout=kernel_timeout, compile_jobs=compile_jobs, remeasure=remeasure,
                 batch=batch, devices=devices, replay_db=replay_db)
    options = commands.SearchOptions(
        shape=shape_of(M, N, K), families=with_layout(for_batch(families_of(family, precision), batch), layout),
        db_path=default_db() if db is None else db, batch=batch,
        sampler=sampler, trials=trials, timeout=timeout, seed=seed, kind=backend, devices=devices,
        workers=workers, storage=storage, study=study, kernel_timeout=kernel_timeout, replay_db=replay_db,
        compile_jobs=compile_jobs, remeasure=remeasure)
    return commands.search_command(options)


def with_layout(families: list[Family], layout: str | None) -> list[Family]:
    return narrow_to(families, {} if layout is None else layout_choices(layout))


def best(M: int, N: int | None = None, K: int | None = None, *, db: str | None = None, backend: str = "cuda",
         gpu: str | None = None, family: str | None = None, precision: str = "fp32") -> dict:
    """The fastest verified result row for the shape (`autotune best`) among the families the
    contract `precision` admits (the default "fp32": no tensor-core row): at a shape never tuned,
    the nearest recorded shape's fastest valid at this one (said in one line on stderr); none at
    all is an AutotuneError. The database is only read."""
    path = default_db() if db is None else db
    backend_kind(backend)
    if family is not None and not isinstance(family, str):
        raise AutotuneError(f"family={family!r}: best() reads one family's rows; pass its name, or None for all")
    if family is not None and family not in FAMILIES:
        raise AutotuneError(f"unknown family {family!r}; known: {', '.join(FAMILIES)}")
    _check_gpu(gpu, "any GPU's rows")
    return find_best(store.open_readonly(path), path, shape_of(M, N, K), backend, gpu, family, precision)


def report(db: str | None = None, M: int | None = None, N: int | None = None, K: int | None = None, *,
           output: str | None = None, preset: str | None = None, gpu: str | None = None, arch: str = "sm_90") -> Path:
    """Write report.md and its PNGs for the searches in `db` (`autotune report`): a section per shape
    searched whose M, N and K match those given (None: any). Returns the page's path; output: its
    folder (default report-<database name>). No GPU is used and the database is only read."""
    from autotune.explain.report import report_command  # matplotlib loads only for a report

    if output is not None and not isinstance(output, (str, os.PathLike)):
        raise AutotuneError(f"output={output!r}: pass a folder's path (str or pathlib.Path), or None")
    _check_gpu(gpu, "all")
    if not isinstance(arch, str):
        raise AutotuneError(f"arch={arch!r}: pass an architecture as a str, e.g. \"sm_90\"")
    M, N, K = (None if n is None else _whole(n) for n in (M, N, K))
    for label, value in zip("MNK", (M, N, K)):
        if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
            raise AutotuneError(f"{label}={value!r}: pass a whole number, or None for any")
    return report_command(default_db() if db is None else db, (M, N, K), output, preset, gpu, arch)


def database_path(db: object) -> str | None:
    """load()'s db as a str: a path (str or os.PathLike, a pathlib.Path say), or None for the defaults."""
    if db is None or isinstance(db, str):
        return db
    path = os.fspath(db) if isinstance(db, os.PathLike) else None
    if not isinstance(path, str):
        raise AutotuneError(f"load(db={db!r}): pass the path of a results database (a str or a pathlib.Path), "
                            f"or None for the default ones")
    return path


def databases(db: str | None) -> list[str]:
    """The databases load() reads: the one named; else the default one (AUTOTUNE_DB, db/autotune.sqlite)
    where it exists, then the tuned database the package ships (autotune/store/tuned), whose rows
    count only on the GPU model they were measured on."""
    if db is not None:
        return [db]
    mine = default_db()
    return [*([mine] if os.path.exists(mine) else []), *store.shipped_databases()]


def load(db: str | os.PathLike[str] | None = None, gpu: str | None = None, *, backend: str = "cuda",
         launcher: Launcher | None = None, defaults_only: bool = False, precision: str = "fp32",
         library: bool = True, tune: str = "off", tune_trials: int = 4, tune_seconds: float = 120.0) -> Matmul:
    """A matmul that runs, per call, the fastest of cuBLAS and the kernels recorded in `db` for the GPU
    model of the operands' device (or `gpu`: a name or UUID whose results to use on any device) at the
    call's shape and layout (db None: the default database and the one the package ships, `databases`): a kernel only where a row measured at that very shape beat cuBLAS timed
    beside it (api.dispatch says by how much), else cuBLAS (torch's own matmul on torch tensors).
    library=False: never cuBLAS; the exact shape's fastest kernel, else the nearest recorded shape's,
    else the `blocked` family default. defaults_only: no database at all, family defaults only.
    precision: the accuracy contract whose families may run ("fp32-tc" admits the tensor-core
    families' TF32-based products; the default "fp32" never runs one).
    launcher: the device side (default: NVRTC and cuda.core on the GPU; tests pass a fake).
    tune="background": a call kind that runs cuBLAS for want of a row at its shape runs it at once, and a
    process of its own measures there, in the background, up to tune_trials candidates (verified first) for
    at most tune_seconds, into `db` (default: AUTOTUNE_DB, else db/autotune.sqlite; created; never a shipped
    one); the calls after it run the winner where it beat cuBLAS (autotune.api.firstuse, docs/first-use.md)."""
    db = database_path(db)
    backend_kind(backend)  # an unknown name is one line naming the known ones
    for name, flag in (("defaults_only", defaults_only), ("library", library)):
        if not isinstance(flag, bool):
            raise AutotuneError(f"load({name}={flag!r}): pass True or False")
    _check_gpu(gpu, "the operands' device", call="load(")
    families_for(precision)  # an unknown precision, like every check here, before tuning_db creates a database
    if launcher is None:  # and no GPU
        from autotune.backends.cuda.launcher import CudaLauncher

        launcher = CudaLauncher()
    budget = Budget(tune_trials, tune_seconds)
    tuned = tuning_db(tune, default_db() if db is None else db, budget, backend=backend, gpu=gpu,
                      library=library, defaults_only=defaults_only)
    dispatcher = Dispatcher(None if defaults_only else databases(db), backend, gpu, precision,
                            library=library and not defaults_only)
    matmul = Matmul(dispatcher, launcher)
    if tuned is not None:
        attach(matmul, tuned, backend, precision, budget)
    return matmul
