"""What the commands do, kept out of the CLI so that it stays a thin layer of options."""
from __future__ import annotations

import random
import sys
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, NamedTuple

from autotune import store
from autotune.api.checks import check_search
from autotune.api.result import TuneResult
from autotune.backends.kinds import backend_kind
from autotune.backends.outcome import FAILED, OK, Fault
from autotune.backends.pool import (
    KeptWorkers,
    check_kernel_timeout,
    check_same_model,
    exit_status,
    stop_on_signals,
    worker_specs,
)
from autotune.backends.reference import contract_text
from autotune.codegen.render import render
from autotune.errors import AutotuneError
from autotune.space import Config, Family, Limits, combinations, count_valid, enumerate_space, fitted_around, violations

if TYPE_CHECKING:
    import sqlite_utils

    from autotune.backends.child import WorkerSpec
    from autotune.backends.verify import Runner
    from autotune.backends.worker import WorkerBackend
    from autotune.search.pipeline import Compiler


def format_row(row: dict) -> str:
    shape = f"{row['M']}x{row['N']}x{row['K']}"
    pct = f"{row['pct_cublas']:.1f}% of cuBLAS" if row.get("pct_cublas") else "no cuBLAS baseline"
    peak = f", {row['pct_peak']:.1f}% of FP32 peak" if row.get("pct_peak") else ""
    return (f"{row['kernel']}  (id {row['id']}, {row['gpu_name']}, {shape})\n"
            f"  {row['time_ms']:.3f} ms median [{row['time_ms_min']:.3f} .. {row['time_ms_max']:.3f}], "
            f"{row['tflops']:.2f} TFLOP/s, {pct}{peak}\n"
            f"  {contract_text(row)}" + energy_text(row))


def energy_text(row: dict) -> str:
    """The row's power and cuBLAS's, where read (backends/cuda/energy.py): a line of its own, else nothing."""
    if not row.get("watts") or not row.get("gflops_per_watt"):
        return ""
    cublas = (f"; cuBLAS {row['cublas_watts']:.0f} W, {row['cublas_gflops_per_watt']:.3g} GFLOP/s/W"
              if row.get("cublas_watts") and row.get("cublas_gflops_per_watt") else "")
    return f"\n  {row['watts']:.0f} W, {row['gflops_per_watt']:.3g} GFLOP/s/W{cublas}"


@dataclass(frozen=True)
class SearchOptions:
    shape: tuple[int, int, int]
    families: list[Family]
    db_path: str
    sampler: str = "tpe-mv"
    trials: int = 60
    timeout: float | None = None
    seed: int = 0
    kind: str = "cuda"
    devices: tuple[int, ...] | None = None
    workers: int | None = None
    storage: str | None = None
    study: str | None = None
    kernel_timeout: float | None = None
    replay_db: str | None = None  # --backend replay: the recorded database that answers
    compile_jobs: int | None = None  # processes compiling ahead for GPU workers (None: pipeline.default_jobs())
    remeasure: str | None = None  # "failed": the configs whose recorded row is a kernel's failure measured again;
    # "stale": those whose recorded row was measured from another source than today's (a template changed)
    batch: int = 1  # > 1: a strided batch of this many products per launch (BLAS=1 kernels only)

    def __post_init__(self) -> None:  # every search (tune, suite) goes through here: no bad value is ever stored
        check_search(self.study, self.storage, trials=self.trials, timeout=self.timeout, seed=self.seed,
                     sampler=self.sampler, backend=self.kind, workers=self.workers,
                     kernel_timeout=self.kernel_timeout, compile_jobs=self.compile_jobs, remeasure=self.remeasure,
                     batch=self.batch, devices=self.devices, replay_db=self.replay_db)


def start_measuring(specs: list[WorkerSpec], db_path: str,
                    kept: KeptWorkers | None = None) -> tuple[list[WorkerBackend], sqlite_utils.Database]:
    """Workers first, the database second: a machine without a GPU, or a shape too large
    for it, writes nothing. The workers' cuBLAS times are recorded (baselines); the caller closes the
    workers (kept: `kept`'s, moved to the specs' shape, which its owner closes)."""
    from autotune.backends.pool import start_workers

    store.check_path(db_path)
    workers = kept.at(specs) if kept is not None else start_workers(specs)
    try:
        check_kernel_timeout(workers)
        db = store.open_db(db_path)
        for w in workers:
            if w.baseline:
                record_baseline(db, w)
    except BaseException:
        for w in workers:
            w.close()
        raise
    return workers, db


class Measured(NamedTuple):
    text: str  # a row per config, or why it has none
    failed: bool  # no config was verified (each is recorded with its status): the command exits 1, as verify does


def measure_command(shape: tuple[int, int, int], configs: list[Config], fit: Mapping[str, Any] | None, seed: int,
                    device: int, db_path: str, kind: str = "cuda", kernel_timeout: float | None = None,
                    again: bool = False) -> Measured:
    """Each config's row at the shape, measured, or recorded earlier (said so) unless `again`; `fit`: the names given,
    the others fitted on the worker's device (its SMs and registers), None: the configs as they are."""
    from autotune.backends.child import WorkerSpec
    from autotune.search.measure import evaluate

    [worker], db = start_measuring([WorkerSpec(kind, shape, seed, device, kernel_timeout)], db_path)
    redo = store.Redo.every_row_of(db) if again else None
    lines, statuses = [], []
    try:
        for config in configs if fit is None else fitted_around(configs, shape, worker.limits, fit):
            done = evaluate(db, worker, config, worker.limits, worker.peak_tflops, redo=redo)
            if done is None:
                lines.append(f"{config.name}: another worker is measuring it right now; its row will be in {db_path}")
                continue
            row = done.row
            statuses.append(row["status"])
            line = format_row(row) if row["status"] == OK else f"{config.name}: {row['status']}: {row['reason']}"
            if done.cached and row.get("id") is not None:  # not timed now: say so, and how to time it again
                line += f"  (recorded earlier as id {row['id']}; --again measures it anew)"
            lines.append(line)
    finally:
        worker.close()
    return Measured("\n".join(lines), bool(statuses) and OK not in statuses)


class Kept:
    """What the searches of many shapes in turn (autotune cover, the suite) keep from one to the next, each started
    once: one worker per GPU, moved to each shape (pool.KeptWorkers), and the processes that compile ahead
    (pipeline.Compiler). Its owner closes it at the end."""

    def __init__(self) -> None:
        self.workers = KeptWorkers()
        self.compiler: Compiler | None = None

    def compiler_for(self, workers: list[WorkerBackend], jobs: int | None) -> Compiler | None:
        from autotune.search.loop import start_compiler

        if self.compiler is None:
            self.compiler = start_compiler(workers, jobs)
        return self.compiler

    def close(self) -> None:
        compiler, self.compiler = self.compiler, None
        if compiler is not None:
            compiler.close()
        self.workers.close()


def search_command(o: SearchOptions, stop: threading.Event | None = None, kept: Kept | None = None) -> TuneResult:
    """Run the search; print the summary; return its figures and exit status (see pool.exit_status).
    kept: what searches of several shapes keep from one to the next, which its owner closes (Kept)."""
    from autotune.search.loop import open_storage
    from autotune.search.samplers import require
    from autotune.search.study import check_named_study

    require(o.sampler)  # a sampler that cannot run is refused before the database is created
    stop = stop or threading.Event()
    o = check_replay(o)
    preflight(o.families)
    specs = worker_specs(o.kind, o.shape, o.seed, o.devices, o.workers, o.kernel_timeout, o.replay_db, o.batch)
    storage = open_storage(o.storage)  # before any worker starts: a wrong URL costs nothing
    if o.study:  # a default name says its space, so only a name given can meet a study of another space
        check_named_study(storage, o.study, o.families, o.shape)
    with stop_on_signals(stop):  # from before the workers start: a Ctrl-C while they start stops the search too
        result, db, first = _measure(o, stop, kept, specs, storage)
    print(summary(db, first, result), flush=True)
    return TuneResult.of(result, exit_status(stop, result.interrupted))


def _measure(o: SearchOptions, stop: threading.Event, kept: Kept | None, specs: list, storage: Any):
    """Start (or take the kept) workers and run the search on them; (its result, the database, the first worker)."""
    from autotune.search.loop import run_search

    workers, db = start_measuring(specs, o.db_path, kept.workers if kept else None)
    first = workers[0]
    bar = None
    try:
        check_same_model(workers)
        print(_header(o, workers), file=sys.stderr)
        bar = _progress_bar(o.trials)
        result = run_search(db, workers, o.families, first.limits, sampler=o.sampler, trials=o.trials,
                            timeout=o.timeout, seed=o.seed, peak_tflops=first.peak_tflops,
                            progress=bar.update_with, storage=storage, study=o.study, stop=stop,
                            compile_jobs=o.compile_jobs, remeasure=FAILED if o.remeasure == "failed" else (),
                            remeasure_stale=o.remeasure == "stale", note=bar.note,
                            compiler=kept.compiler_for(workers, o.compile_jobs) if kept else None)
    finally:
        if bar:
            bar.close()
        for w in workers if kept is None else []:
            w.close()
    return result, db, first


def check_replay(o: SearchOptions) -> SearchOptions:
    """The options a replay can search: refused when the dataset recorded none of the families,
    narrowed (with a note) to those it recorded."""
    from dataclasses import replace

    from autotune.backends.replay import recorded_families

    check_replay_db(o.kind, o.replay_db, o.db_path)
    if not backend_kind(o.kind).replays:
        return o
    kept = recorded_families(str(o.replay_db), o.shape, [f.name for f in o.families])
    if len(kept) < len(o.families):
        left = ", ".join(f.name for f in o.families if f.name not in kept)
        print(f"autotune: the replay dataset has no {left} results at this shape; searching {', '.join(kept)}",
              file=sys.stderr)
    return replace(o, families=[f for f in o.families if f.name in kept])


def check_replay_db(kind: str, replay_db: str | None, db_path: str) -> None:
    """--replay-db goes with --backend replay, exists, and is not the database written to."""
    from pathlib import Path

    if not backend_kind(kind).replays:
        if replay_db:
            raise AutotuneError(f"--replay-db is the dataset that --backend replay answers from; --backend {kind} "
                                f"does not read it: drop --replay-db, or add --backend replay")
        return
    if not replay_db:
        raise AutotuneError("--backend replay needs --replay-db PATH (a recorded results database)")
    if not Path(replay_db).is_file():
        raise AutotuneError(f"replay database {replay_db} does not exist; pass --replay-db with a recorded results database")
    if Path(replay_db).resolve() == Path(db_path).resolve():
        raise AutotuneError("--replay-db and --db are the same file: a replay must not write into its dataset")


def preflight(families: list[Family], kind: str | None = None) -> None:
    """Render each family's default config once, so that a broken template is one error
    before anything starts rather than a failure in the middle of a search. A family narrowed
    (-p) to no valid config at all is one error too: every trial would be refused. With the backend's
    kind (suite, cover: before their first shape), an unusable kernel cache too, where it compiles."""
    from autotune.codegen.nvrtc import cache_dir
    from autotune.space import iter_valid, make_config

    if kind is not None and not backend_kind(kind).replays:
        cache_dir()  # EnvironmentFault: one line before the first shape's header, not after it
    for family in families:
        if next(iter_valid(family), None) is None:
            raise AutotuneError(f"no config of family {family.name} is valid with these -p values: each combination "
                                f"breaks a constraint; see `autotune space --family {family.name}` for the constraints")
        config = make_config(family, {})
        if not violations(config):
            render(config)


def _header(o: SearchOptions, workers: list) -> str:
    prov, base = workers[0].provenance, workers[0].baseline
    devices = ",".join(str(w.spec.device) for w in workers)
    where = f"devices {devices}" if backend_kind(o.kind).on_gpus else f"{len(workers)} worker(s)"
    cublas = f", cuBLAS {base.median_ms:.3f} ms" if base else ""
    cublas += f" at {base.watts:.0f} W" if base and base.watts else ""
    return (f"autotune: {prov['gpu_name']} ({prov['arch']}), {where}, shape {'x'.join(map(str, o.shape))}, "
            f"families {', '.join(f.name for f in o.families)}, sampler {o.sampler}{cublas}")


def record_baseline(db, backend) -> None:
    """The backend's cuBLAS time at its shape as a baselines row (a search's workers, benchmarks/small_corners.py)."""
    t, prov, (M, N, K) = backend.baseline, backend.provenance, backend.shape
    store.insert_baseline(db, {"backend": backend.name, "gpu_uuid": prov["gpu_uuid"], "gpu_name": prov["gpu_name"],
                               "M": M, "N": N, "K": K, "time_ms": t.median_ms, "time_ms_min": t.min_ms,
                               "time_ms_max": t.max_ms, "tflops": 2.0 * M * N * K / t.median_ms / 1e9,
                               "sm_clock_mhz": backend.baseline_clock,
                               **({"watts": t.watts} if t.watts is not None else {}),  # a REAL, never a first NULL
                               "library": f"cuBLAS {prov['cublas_version']} (pedantic FP32, no TF32)"})


class _Bar:
    """Progress over trials with the best so far: a tqdm bar on a terminal; into a file or a
    pipe (a log) a plain line every tenth of the new measurements instead, since each redraw
    of a bar would be one more frame in the log."""

    def __init__(self, total: int):
        from tqdm import tqdm

        self._total, self._new = total, 0
        self._every = max(1, total // 10)
        self._bar = (tqdm(total=total, unit="new", desc="search", file=sys.stderr, dynamic_ncols=True)
                     if sys.stderr.isatty() else None)

    def update_with(self, result, done) -> None:
        new = not done.cached and done.row["status"] != "invalid"
        b = result.best
        pct = f" ({b['pct_cublas']:.1f}% cuBLAS)" if b and b.get("pct_cublas") else ""
        best = f"{b['tflops']:.4g} TFLOP/s{pct}" if b else "none yet"
        state = f"trial {result.trials}, best {best}, last {done.row['status']}"
        if self._bar is not None:
            self._bar.update(int(new))
            self._bar.set_postfix_str(state)
            return
        self._new += int(new)
        if new and (self._new % self._every == 0 or self._new == self._total):
            print(f"search: {self._new}/{self._total} new, {state}", file=sys.stderr, flush=True)

    def note(self, line: str) -> None:
        """A line for the log that leaves a bar on a terminal intact."""
        if self._bar is not None:
            self._bar.write(line, file=sys.stderr)
        else:
            print(line, file=sys.stderr, flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def _progress_bar(total: int) -> _Bar:
    return _Bar(total)


def summary(db, backend, result) -> str:
    M, N, K = backend.shape
    skipped = f", {result.skipped} skipped (another worker was measuring it, or a value of another family was proposed)" if result.skipped else ""
    lines = [f"study {result.study}: {result.trials} trials, {result.new} new measurements{skipped} in "
             f"{result.seconds:.1f} s by {result.workers} worker(s)" + (" (interrupted)" if result.interrupted else ""),
             "statuses: " + ", ".join(f"{k} {v}" for k, v in sorted(result.statuses.items())),
             *(["every valid config of the searched space has a result at this shape: the search stopped (more "
                "trials find nothing new; widen --family or -p to search further)"] if result.exhausted else []),
             (f"cuBLAS (no TF32): {backend.baseline.median_ms:.3f} ms = "
              f"{2.0 * M * N * K / backend.baseline.median_ms / 1e9:.2f} TFLOP/s" if backend.baseline
              else f"backend {backend.name}: no cuBLAS baseline, times are not GPU times"),
             "top configs for this GPU and shape (all searches so far):",
             f"  {'id':>5}  {'ms':>8}  {'TFLOP/s':>8}  {'%cuBLAS':>7}  kernel"]
    rows = sorted(store.results(db, backend.shape, backend.name, backend.provenance["gpu_name"], OK, backend.batch),
                  key=lambda r: r["time_ms"])
    for r in rows[:10]:
        pct = f"{r['pct_cublas']:>7.1f}" if r["pct_cublas"] else f"{'-':>7}"
        lines.append(f"  {r['id']:>5}  {r['time_ms']:>8.3f}  {r['tflops']:>8.4g}  {pct}  {r['kernel']}")
    return "\n".join(lines)


def describe_space(family: Family, limits: Limits) -> str:
    total, valid = combinations(family), count_valid(family, limits)
    lines = [f"{family.name}: {family.doc}", f"  {valid} valid of {total} combinations"]
    for p in family.params:
        default = "(see doc)" if callable(p.default) else p.default
        lines.append(f"  {p.name:<7} {', '.join(map(str, p.values))}  default {default}: {p.doc}")
    exact = total <= 200_000  # a large space gets its refusal shares from a random sample
    if exact:
        refused = [bad for _, bad in enumerate_space(family, limits)]
    else:
        rng = random.Random(0)
        draws = [Config(family, tuple((p.name, rng.choice(p.values)) for p in family.params)) for _ in range(20000)]
        refused = [violations(c, limits) for c in draws]
    for c in family.constraints:
        n = sum(1 for bad in refused if c.reason in bad)
        lines.append(f"  constraint: {c.reason} (refuses {n})" if exact else
                     f"  constraint: {c.reason} (refuses about {n / len(refused):.0%})")
    return "\n".join(lines)

def verify_command(kind: str, families: list[Family], limit: int, shapes: list[tuple[int, int, int]], seed: int,
                   device: int) -> list:
    """Every sampled variant of each family on every shape against the float64 reference."""
    from autotune.backends.verify import sample_configs, verify_configs

    run: Runner
    if backend_kind(kind).emulated:
        from autotune.backends.sim import run
        from autotune.backends.sim.backend import check_emulated

        check_emulated(shapes)
    else:
        from autotune.backends.cuda.backend import GpuRunner

        run = GpuRunner(device)
    rows = []
    for family in families:
        try:
            rows += verify_configs(sample_configs(family, limit, seed), shapes, run, seed)
        except Fault as exc:
            raise AutotuneError(f"a kernel faulted and the CUDA context is lost: {exc}") from None
    return rows


def verify_table(rows: list) -> str:
    lines = [f"{'status':<14} {'error':>9}  {'shape':<14} kernel"]
    for r in rows:
        shape = "x".join(map(str, r.shape))
        lines.append(f"{r.status:<14} {r.error:>9.2e}  {shape:<14} {r.config}" + (f"  ({r.reason})" if r.reason else ""))
    from autotune.backends.verify import SKIPPED, failures

    bad, skipped = failures(rows), sum(r.status == SKIPPED for r in rows)
    why = " (invalid at the shape by the config's own rules: not run, as a search would not run them)" if skipped else ""
    lines.append(f"{len(rows) - bad - skipped} passed, {bad} failed, {skipped} skipped{why}")
    return "\n".join(lines)
