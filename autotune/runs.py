"""What the commands do, kept out of the CLI so that it stays a thin layer of options."""
from __future__ import annotations

import sys

from . import store
from .codegen import render, sha256
from .errors import AutotuneError
from .export import manifest, write_export
from .outcome import OK, Fault
from .space import Config, Family, Limits, enumerate_space


def format_row(row: dict) -> str:
    shape = f"{row['M']}x{row['N']}x{row['K']}"
    pct = f"{row['pct_cublas']:.1f}% of cuBLAS" if row.get("pct_cublas") else "no cuBLAS baseline"
    peak = f", {row['pct_peak']:.1f}% of FP32 peak" if row.get("pct_peak") else ""
    return (f"{row['kernel']}  (id {row['id']}, {row['gpu_name']}, {shape})\n"
            f"  {row['time_ms']:.3f} ms median [{row['time_ms_min']:.3f} .. {row['time_ms_max']:.3f}], "
            f"{row['tflops']:.2f} TFLOP/s, {pct}{peak}")


def _open(kind: str, shape: tuple[int, int, int], seed: int, device: int, db_path: str,
          replay_db: str | None = None):
    """The backend for a shape, its limits and peak, and the database (opened only once the
    backend is known to work, so a machine without a GPU writes nothing)."""
    if kind == "replay":  # answers from a recorded database; rows go to db_path as backend "replay"
        from pathlib import Path

        from .replay import ReplayBackend

        if not replay_db:
            raise AutotuneError("--backend replay needs --replay-db PATH (a recorded results database)")
        if Path(replay_db).resolve() == Path(db_path).resolve():
            raise AutotuneError("--replay-db and --db are the same file: a replay must not write into its dataset")
        backend = ReplayBackend(replay_db, shape)
        return Limits(), None, store.open_db(db_path), backend
    if kind == "sim":
        from .sim_backend import SimBackend

        backend = SimBackend(*shape, seed=seed)
        return Limits(), None, store.open_db(db_path), backend
    from .cuda_backend import CudaBackend
    from .device import device_info

    info = device_info(device)
    db = store.open_db(db_path)
    backend = CudaBackend(*shape, device=device, seed=seed)
    _record_baseline(db, backend)
    return info.limits, info.peak_tflops, db, backend


def measure_command(shape: tuple[int, int, int], configs: list[Config], seed: int, device: int,
                    db_path: str, kind: str = "cuda") -> str:
    from .evaluate import evaluate

    limits, peak, db, backend = _open(kind, shape, seed, device, db_path)
    lines = []
    for config in configs:
        try:
            row = evaluate(db, backend, config, limits, peak).row
        except Fault as exc:
            raise AutotuneError(f"the kernel faulted and the CUDA context is lost: {exc}") from None
        lines.append(format_row(row) if row["status"] == OK else f"{config.name}: {row['status']}: {row['reason']}")
    return "\n".join(lines)


def search_command(shape: tuple[int, int, int], families: list[Family], sampler: str, trials: int,
                   timeout: float | None, seed: int, device: int, db_path: str, kind: str = "cuda",
                   replay_db: str | None = None) -> None:
    from .search import run_search

    limits, peak, db, backend = _open(kind, shape, seed, device, db_path, replay_db)
    prov = backend.provenance
    base = f", cuBLAS {backend.baseline.median_ms:.3f} ms" if backend.baseline else ""
    print(f"autotune: {prov['gpu_name']} ({prov['arch']}), shape {'x'.join(map(str, shape))}, "
          f"families {', '.join(f.name for f in families)}, sampler {sampler}{base}", file=sys.stderr)
    bar = _progress_bar(trials)
    try:
        result = run_search(db, backend, families, limits, sampler=sampler, trials=trials, timeout=timeout,
                            seed=seed, peak_tflops=peak, progress=bar.update_with)
    except Fault as exc:
        raise AutotuneError(f"a kernel faulted and the CUDA context is lost ({exc}); it is recorded as "
                            f"launch_error: run the same command again, measured configs are reused") from None
    finally:
        bar.close()
    print(summary(db, backend, result))


def _record_baseline(db, backend) -> None:
    t, prov, (M, N, K) = backend.baseline, backend.provenance, backend.shape
    store.insert_baseline(db, {"backend": backend.name, "gpu_uuid": prov["gpu_uuid"], "gpu_name": prov["gpu_name"],
                               "M": M, "N": N, "K": K, "time_ms": t.median_ms, "time_ms_min": t.min_ms,
                               "time_ms_max": t.max_ms, "tflops": 2.0 * M * N * K / t.median_ms / 1e9,
                               "sm_clock_mhz": backend.baseline_clock,
                               "library": f"cuBLAS {prov['cublas_version']} (pedantic FP32, no TF32)"})


class _Bar:
    """A tqdm bar over trials with the best so far; plain lines when tqdm is absent."""

    def __init__(self, total: int):
        from tqdm import tqdm

        self._bar = tqdm(total=total, unit="new", desc="search", file=sys.stderr, dynamic_ncols=True)

    def update_with(self, result, done) -> None:
        if not done.cached and done.row["status"] != "invalid":
            self._bar.update(1)
        b = result.best
        pct = f" ({b['pct_cublas']:.1f}% cuBLAS)" if b and b.get("pct_cublas") else ""
        best = f"{b['tflops']:.4g} TFLOP/s{pct}" if b else "none yet"
        self._bar.set_postfix_str(f"trial {result.trials}, best {best}, last {done.row['status']}")

    def close(self) -> None:
        self._bar.close()


def _progress_bar(total: int) -> _Bar:
    return _Bar(total)


def summary(db, backend, result) -> str:
    M, N, K = backend.shape
    lines = [f"study {result.study}: {result.trials} trials, {result.new} new measurements in "
             f"{result.seconds:.1f} s" + (" (interrupted)" if result.interrupted else ""),
             "statuses: " + ", ".join(f"{k} {v}" for k, v in sorted(result.statuses.items())),
             (f"cuBLAS (no TF32): {backend.baseline.median_ms:.3f} ms = "
              f"{2.0 * M * N * K / backend.baseline.median_ms / 1e9:.2f} TFLOP/s" if backend.baseline
              else f"backend {backend.name}: no cuBLAS baseline, times are not GPU times"),
             "top configs for this GPU and shape (all searches so far):",
             f"  {'id':>5}  {'ms':>8}  {'TFLOP/s':>8}  {'%cuBLAS':>7}  kernel"]
    rows = sorted(store.results(db, backend.shape, backend.name, backend.provenance["gpu_uuid"], OK),
                  key=lambda r: r["time_ms"])
    for r in rows[:10]:
        pct = f"{r['pct_cublas']:>7.1f}" if r["pct_cublas"] else f"{'-':>7}"
        lines.append(f"  {r['id']:>5}  {r['time_ms']:>8.3f}  {r['tflops']:>8.4g}  {pct}  {r['kernel']}")
    return "\n".join(lines)


def export_command(db_path: str, shape: tuple[int, int, int], config: Config | None, output: str):
    from .families import FAMILIES
    from .space import make_config

    db = store.open_db(db_path)
    row = None
    if config is None:
        row = store.best(db, shape)
        if row is None:
            raise AutotuneError(f"no verified result for {'x'.join(map(str, shape))} to export; run "
                                f"`autotune search` first or name a config with --family/-p")
        family = FAMILIES[row["family"]]
        config = make_config(family, {p.name: row[p.name] for p in family.params})
    source = render(config)
    source_hash = sha256(source)
    if row is None:  # a named config: attach its measurement at this shape if there is one
        row = next((r for r in store.results(db, shape, status=OK) if r["source_hash"] == source_hash), None)
    info = manifest(config, config.geometry(shape[0], shape[1]), shape, source_hash, row)
    return write_export(output, source, info)


def describe_space(family: Family, limits: Limits) -> str:
    configs = list(enumerate_space(family, limits))
    valid = sum(1 for _, bad in configs if not bad)
    lines = [f"{family.name}: {family.doc}", f"  {valid} valid of {len(configs)} combinations"]
    for p in family.params:
        default = "(see doc)" if callable(p.default) else p.default
        lines.append(f"  {p.name:<7} {', '.join(map(str, p.values))}  default {default}: {p.doc}")
    for c in family.constraints:
        refused = sum(1 for _, bad in configs if c.reason in bad)
        lines.append(f"  constraint: {c.reason} (refuses {refused})")
    return "\n".join(lines)


def verify_command(kind: str, families: list[Family], limit: int, shapes: list[tuple[int, int, int]], seed: int,
                   device: int) -> list:
    """Every sampled variant of each family on every shape against the float64 reference."""
    from .verify import sample_configs, verify_configs

    if kind == "sim":
        from .sim import run
    else:
        from .cuda_backend import GpuRunner

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
    bad = sum(r.status != "ok" for r in rows)
    lines.append(f"{len(rows) - bad} passed, {bad} failed")
    return "\n".join(lines)
