"""The command line: each command parses its options, calls one library function and
prints. Domain errors become one line on stderr and exit status 2."""
from __future__ import annotations

import json
import os
import sqlite3
import sys
from contextlib import contextmanager
from functools import wraps
from typing import Iterator

import click

from autotune import __version__, store
from autotune.errors import AutotuneError
from autotune.explain.model import PRESETS
from autotune.families import FAMILIES, config_of_row
from autotune.search import SAMPLERS
from autotune.space import Config, Limits, check_shape, expand, make_config, narrow

DB_HELP = "SQLite results database (default: $AUTOTUNE_DB or db/autotune.sqlite)"


def default_db() -> str:
    return os.environ.get("AUTOTUNE_DB", str(store.DEFAULT_DB))


def friendly(fn):
    """Turn domain errors into one line and exit status 2, never a traceback."""
    @wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except AutotuneError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(2)
        except sqlite3.DatabaseError as exc:  # locked past the busy timeout, disk full, corrupted meanwhile
            click.echo(f"error: the results database failed: {exc}; check the --db file and run again", err=True)
            sys.exit(2)
    return wrapper


class OneLineUsageError(click.UsageError):
    """click's usage errors (a bad option value, an unknown option) as one line, like ours."""

    def show(self, file=None) -> None:
        command = self.ctx.command_path if self.ctx else "autotune"
        click.echo(f"error: {self.format_message()} (see `{command} --help`)", err=True)


@contextmanager
def _one_line() -> Iterator[None]:
    try:
        yield
    except OneLineUsageError:
        raise
    except click.UsageError as exc:
        raise OneLineUsageError(" ".join(exc.format_message().split()), exc.ctx) from None


class Cli(click.Group):
    """The command group; parses each command's options with one-line usage errors."""

    def make_context(self, *args, **kwargs):
        with _one_line():
            return super().make_context(*args, **kwargs)

    def invoke(self, ctx):
        with _one_line():
            return super().invoke(ctx)


def shape_options(fn):
    fn = click.option("--K", "K", type=int, help="inner dimension (default: M)")(fn)
    fn = click.option("--N", "N", type=int, help="columns of C (default: M)")(fn)
    return click.option("--M", "M", type=int, required=True, help="rows of C")(fn)


def config_options(fn):
    fn = click.option("--id", "result_id", type=int, help="a result id from the database")(fn)
    fn = click.option("-p", "--param", "params", multiple=True, metavar="NAME=VALUE",
                      help="a parameter of the family; repeat it (left-out ones take defaults)")(fn)
    return click.option("--family", type=click.Choice(sorted(FAMILIES)), help="kernel family")(fn)


def resolve_shape(M: int, N: int | None, K: int | None) -> tuple[int, int, int]:
    shape = (M, M if N is None else N, M if K is None else K)
    check_shape(*shape)
    return shape


def parse_choices(params: tuple[str, ...]) -> dict[str, list[str]]:
    """-p NAME=VALUE or -p NAME=V1,V2,...: the values given for each parameter."""
    out: dict[str, list[str]] = {}
    for item in params:
        name, sep, value = item.partition("=")
        values = [v.strip() for v in value.split(",") if v.strip()]
        if not sep or not name.strip() or not values:
            raise AutotuneError(f"-p {item!r} is not NAME=VALUE (for example -p T=32, or -p BM=64,128 in search/measure)")
        if name.strip() in out:  # the second would silently replace the first
            raise AutotuneError(f"-p {name.strip()} is given twice; give its values once, comma-separated "
                                f"(-p {name.strip()}={','.join(out[name.strip()] + values)})")
        out[name.strip()] = values
    return out


def parse_params(params: tuple[str, ...]) -> dict[str, str]:
    """One value per parameter (a command that names one config)."""
    out = {}
    for name, values in parse_choices(params).items():
        if len(values) > 1:
            raise AutotuneError(f"-p {name}={','.join(values)} gives several values; this command takes one "
                                f"(search and measure take lists)")
        out[name] = values[0]
    return out


def narrow_families(families: list, params: tuple[str, ...]) -> list:
    """Restrict each family to the -p values of the parameters it has (search a sub-space)."""
    choices = parse_choices(params)
    for name in choices:
        if not any(name in {p.name for p in f.params} for f in families):
            raise AutotuneError(f"no family searched has a parameter {name!r}; "
                                f"see `autotune space` for each family's parameters")
    return [narrow(f, {n: v for n, v in choices.items() if n in {p.name for p in f.params}}) for f in families]


def resolve_config(db_path: str, family: str | None, params: tuple[str, ...], result_id: int | None) -> Config | None:
    if result_id is not None and (family or params):
        raise AutotuneError("give either --id or --family/-p, not both")
    if result_id is not None:
        return config_of_row(store.result_by_id(store.open_readonly(db_path), result_id))
    if params and not family:
        raise AutotuneError("-p needs --family (for example --family tiled -p T=32)")
    return make_config(FAMILIES[family], parse_params(params)) if family else None


def parse_families(text: str) -> list:
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in FAMILIES]
    if unknown or not names:
        raise AutotuneError(f"unknown family {','.join(unknown) or text!r}; choose from {', '.join(FAMILIES)}")
    return [FAMILIES[n] for n in names]


@click.group(cls=Cli, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="autotune")
def cli() -> None:
    """Code-generating autotuner for FP32 SGEMM (C = A*B, row-major) on NVIDIA GPUs."""


KERNEL_TIMEOUT_HELP = ("seconds one kernel launch may take before the watchdog stops it and records timeout "
                       "(default: 1000x cuBLAS at the shape, at least 1 s; on the emulator 60 s)")


@cli.command()
@shape_options
@click.option("--family", "family_text", default=",".join(FAMILIES), show_default=True,
              help="families to search, comma-separated")
@click.option("-p", "--param", "params", multiple=True, metavar="NAME=V1,V2",
              help="search only these values of a parameter (repeat for others), e.g. -p BM=128,256")
@click.option("--sampler", type=click.Choice(SAMPLERS), default="tpe-mv", show_default=True,
              help="tpe-mv (multivariate TPE: the fewest trials to the best on the H200 datasets, "
                   "docs/BENCHMARKS.md), tpe, random, grid (every valid config in order), qmc (Sobol), "
                   "gp (needs the bench extra)")
@click.option("--trials", type=click.IntRange(min=1), default=60, show_default=True,
              help="new configs to measure (configs already in the database are reused, not counted)")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), help="stop after this many seconds")
@click.option("--seed", type=int, default=0, show_default=True, help="sampler seed and input seed")
@click.option("--device", type=click.IntRange(min=0), help="one CUDA device index (the same as --devices N)")
@click.option("--devices", "devices_text", metavar="0,1",
              help="CUDA devices, one worker each (default: every visible GPU)")
@click.option("--workers", type=click.IntRange(min=1),
              help="worker processes (default: one per device; 1 on the emulator)")
@click.option("--backend", type=click.Choice(["cuda", "sim", "replay"]), default="cuda", show_default=True,
              help="cuda: time on the GPU; sim: the CPU emulator (small shapes, times are not GPU times); "
                   "replay: answer from --replay-db (no GPU)")
@click.option("--replay-db", type=click.Path(dir_okay=False),
              help="recorded results database that --backend replay answers from")
@click.option("--storage", metavar="URL|FILE",
              help="keep the Optuna study there and share it: postgresql://USER@HOST/DB for several hosts, "
                   "a journal file for one host (default: in memory, re-learnt from the database)")
@click.option("--study", "study_name", help="the study's name in --storage (default: families-shape-backend-sampler)")
@click.option("--kernel-timeout", type=click.FloatRange(min=0, min_open=True), help=KERNEL_TIMEOUT_HELP)
@click.option("--compile-jobs", type=click.IntRange(min=1), metavar="N",
              help="CPU processes that compile (NVRTC) and disassemble the next trials' kernels while the GPU "
                   "measures; as many trials are asked ahead (default: one per CPU core but one, at most 8; "
                   "GPU backend only)")
@click.option("--remeasure", type=click.Choice(["failed"]),
              help="failed: measure again the configs whose recorded result is compile_error, wrong, launch_error "
                   "or timeout (after fixing what made them fail); the new row is kept beside the old one")
@click.option("--db", "db_path", default=default_db, help=DB_HELP)
@friendly
def search(M, N, K, family_text, params, sampler, trials, timeout, seed, device, devices_text, workers, backend,
           replay_db, storage, study_name, kernel_timeout, compile_jobs, remeasure, db_path) -> None:
    """Generate, compile, verify, time and record SGEMM variants; Optuna picks which.
    Ctrl-C stops after the trials in flight and prints the summary (exit status 130)."""
    from autotune.api.commands import SearchOptions, search_command
    from autotune.backends.pool import parse_devices

    if study_name and not storage:
        raise AutotuneError("--study names a study kept in --storage; without --storage each search is a fresh "
                            "in-memory study (it still reuses every result in --db)")
    families = narrow_families(parse_families(family_text), params)
    options = SearchOptions(shape=resolve_shape(M, N, K), families=families, db_path=db_path,
                            sampler=sampler, trials=trials, timeout=timeout, seed=seed, kind=backend,
                            devices=parse_devices(devices_text, device), workers=workers, storage=storage,
                            study=study_name, kernel_timeout=kernel_timeout, replay_db=replay_db,
                            compile_jobs=compile_jobs, remeasure=remeasure)
    sys.exit(search_command(options))


def results_options(fn):
    """Whose results a reading command picks from: one backend, one GPU model."""
    fn = click.option("--gpu", help="GPU name or UUID (default: the fastest on any GPU in the database)")(fn)
    return click.option("--backend", type=click.Choice(["cuda", "sim", "replay"]), default="cuda",
                        show_default=True, help="whose results: the GPU's, the emulator's or a replay's "
                                                "(never mixed)")(fn)


@cli.command()
@shape_options
@click.option("--family", type=click.Choice(sorted(FAMILIES)), help="best of one family only")
@results_options
@click.option("--json", "as_json", is_flag=True, help="print the whole row as JSON")
@click.option("--db", "db_path", default=default_db, help=DB_HELP)
@friendly
def best(M, N, K, family, gpu, backend, as_json, db_path) -> None:
    """The best verified config for a shape: its time, TFLOP/s and % of cuBLAS."""
    from autotune.api.commands import format_row
    from autotune.api.export import find_best

    shape = resolve_shape(M, N, K)
    row = find_best(store.open_readonly(db_path), db_path, shape, backend, gpu, family)
    click.echo(json.dumps(row, indent=2) if as_json else format_row(row))


@cli.command()
@shape_options
@config_options
@click.option("--seed", type=int, default=0, show_default=True, help="input seed")
@click.option("--device", type=click.IntRange(min=0), default=0, show_default=True, help="CUDA device index")
@click.option("--backend", type=click.Choice(["cuda", "sim"]), default="cuda", show_default=True,
              help="cuda: the GPU; sim: the CPU emulator")
@click.option("--kernel-timeout", type=click.FloatRange(min=0, min_open=True), help=KERNEL_TIMEOUT_HELP)
@click.option("--db", "db_path", default=default_db, help=DB_HELP)
@friendly
def measure(M, N, K, family, params, result_id, seed, device, backend, kernel_timeout, db_path) -> None:
    """Verify and time named configs in a worker process (recorded like search trials).
    -p NAME=V1,V2 measures every combination of the listed values (others at their defaults)."""
    from autotune.api.commands import measure_command

    if family and result_id is None:
        configs = expand(FAMILIES[family], parse_choices(params))
    else:
        config = resolve_config(db_path, family, params, result_id)
        if config is None:
            raise AutotuneError("name a config: --family tiled -p T=32 ..., or --id N")
        configs = [config]
    click.echo(measure_command(resolve_shape(M, N, K), configs, seed, device, db_path, backend, kernel_timeout))


@cli.command()
@shape_options
@config_options
@results_options
@click.option("-o", "--output", default="best.cu", show_default=True, help="CUDA file; the manifest goes beside it")
@click.option("--db", "db_path", default=default_db, help=DB_HELP)
@friendly
def export(M, N, K, family, params, result_id, gpu, backend, output, db_path) -> None:
    """Write a kernel (default: the best for the shape) as CUDA source plus a JSON manifest."""
    from autotune.api.export import export_command

    shape = resolve_shape(M, N, K)
    config = resolve_config(db_path, family, params, result_id)
    cu, js = export_command(db_path, shape, config, output, backend, gpu)
    click.echo(f"wrote {cu} and {js}")


@cli.command()
@config_options
@click.option("--db", "db_path", default=default_db, help=DB_HELP)
@friendly
def render(family, params, result_id, db_path) -> None:
    """Print the CUDA source of one config (no GPU needed)."""
    from autotune.codegen.render import render as render_source

    config = resolve_config(db_path, family, params, result_id)
    if config is None:
        raise AutotuneError("name a config: --family tiled -p T=32 ..., or --id N")
    click.echo(render_source(config), nl=False)


def parse_shape(text: str) -> tuple[int, int, int]:
    parts = text.lower().split("x")
    if len(parts) != 3 or not all(p.strip().isdigit() for p in parts):
        raise AutotuneError(f"--shape {text!r} is not MxNxK (for example 17x33x9)")
    shape = tuple(int(p) for p in parts)
    check_shape(*shape)
    return shape  # type: ignore[return-value]


@cli.command()
@click.option("--backend", type=click.Choice(["sim", "cuda"]), default="sim", show_default=True,
              help="sim: the CPU emulator (no GPU); cuda: the GPU")
@click.option("--family", "family_text", default=",".join(FAMILIES), show_default=True,
              help="families to verify, comma-separated")
@click.option("--limit", type=click.IntRange(min=1), default=12, show_default=True,
              help="variants per family: a sample covering every parameter value")
@click.option("--shape", "shapes", multiple=True, metavar="MxNxK", help="shapes (default: 1x1x1 17x33x9 100x37x129 64x64x64)")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--device", type=click.IntRange(min=0), default=0, show_default=True, help="CUDA device index")
@click.option("--json", "as_json", is_flag=True, help="print the rows as JSON")
@friendly
def verify(backend, family_text, limit, shapes, seed, device, as_json) -> None:
    """Check variants against a float64 reference over odd shapes; exit 1 if any fails."""
    from autotune.api.commands import verify_command, verify_table
    from autotune.backends.verify import SHAPES

    chosen = [parse_shape(s) for s in shapes] or list(SHAPES)
    rows = verify_command(backend, parse_families(family_text), limit, chosen, seed, device)
    if as_json:
        click.echo(json.dumps([{**r.__dict__, "shape": list(r.shape), "backend": backend} for r in rows], indent=1))
    else:
        click.echo(verify_table(rows))
    if any(r.status != "ok" for r in rows):
        sys.exit(1)


@cli.command()
@click.option("--family", type=click.Choice(sorted(FAMILIES)), help="one family only")
def space(family) -> None:
    """The search space: parameters, values, defaults, constraints and how many configs are valid."""
    from autotune.api.commands import describe_space

    for name in [family] if family else FAMILIES:
        click.echo(describe_space(FAMILIES[name], Limits()))


@cli.command()
@config_options
@click.option("--arch", default="sm_90", show_default=True, help="GPU architecture to compile for")
@click.option("--preset", type=click.Choice(sorted(PRESETS)), default="h200", show_default=True,
              help="device spec for the ceiling model")
@click.option("--full", is_flag=True, help="print the whole disassembly before the counts")
@click.option("--db", "db_path", default=default_db, help=DB_HELP + "; read for --id only, never written")
@friendly
def sass(family, params, result_id, arch, preset, full, db_path) -> None:
    """Offline SASS counts of one config (FFMA, LDS by width, ...) and its predicted ceilings; no GPU."""
    from autotune.explain.counts import sass_command

    config = resolve_config(db_path, family, params, result_id)
    if config is None:
        raise AutotuneError("name a config: --family tiled -p T=32 ..., or --id N")
    click.echo(sass_command(config, arch, preset, full))


@cli.command()
@shape_options
@click.option("--db", "db_path", default=default_db, help=DB_HELP)
@click.option("-o", "--output", help="folder for report.md and the PNGs (default: report-<M>x<N>x<K>)")
@click.option("--preset", type=click.Choice(sorted(PRESETS)), default="h200", show_default=True,
              help="device spec for the ceiling model (no GPU is used)")
@click.option("--gpu", help="GPU name or UUID (default: every GPU in the database)")
@click.option("--arch", default="sm_90", show_default=True, help="architecture for rows that do not record one")
@friendly
def report(M, N, K, db_path, output, preset, gpu, arch) -> None:
    """Write a markdown report with plots: the ladder, the ceilings against T, the search's progress."""
    from autotune.explain.report import report_command

    click.echo(f"wrote {report_command(db_path, resolve_shape(M, N, K), output, preset, gpu, arch)}")


@cli.command()
@click.option("--shapes", "shapes_path", default="benchmarks/shapes.toml", show_default=True,
              help="TOML file of shapes, each with its group (Python 3.11+)")
@click.option("--group", "groups", multiple=True, help="only this group's shapes (repeat for others)")
@click.option("--trials", type=click.IntRange(min=1), default=20, show_default=True, help="new configs per shape")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=60.0, show_default=True,
              help="seconds of search per shape")
@click.option("--total-timeout", type=click.FloatRange(min=0, min_open=True),
              help="seconds for the whole suite: a shape gets at most its share of what is left")
@click.option("--family", "family_text", default=",".join(FAMILIES), show_default=True, help="families to search")
@click.option("--backend", type=click.Choice(["cuda", "sim", "replay"]), default="cuda", show_default=True)
@click.option("--replay-db", type=click.Path(dir_okay=False), help="recorded database for --backend replay")
@click.option("--no-tune", is_flag=True, help="tune nothing: write the outputs from --db as it is")
@click.option("--db", "db_path", default=default_db, help=DB_HELP)
@click.option("-o", "--out", default="benchmarks/data", show_default=True, help="folder for the JSON, .md and .png")
@friendly
def suite(shapes_path, groups, trials, timeout, total_timeout, family_text, backend, replay_db, no_tune, db_path,
          out) -> None:
    """Tune every shape of a shapes file with one budget; write each shape's best against cuBLAS (same
    process) and its roofline as JSON, a markdown table and a plot."""
    from autotune.api.suite import SuiteOptions, run_suite

    sys.exit(run_suite(SuiteOptions(shapes_path, db_path, out, parse_families(family_text), trials, timeout,
                                    total_timeout, kind=backend, replay_db=replay_db, groups=groups, tune=not no_tune)))


def main() -> None:
    cli(prog_name="autotune")


if __name__ == "__main__":
    main()
