"""The commands: each parses its options, calls one function of autotune.api (or the library)
and prints. Shared options and parsing are in cli.options."""
from __future__ import annotations

import json
import math
import sys
import threading

import click

from autotune import __version__
from autotune.api import SHAPES as SUITE_SHAPES
from autotune.api.checks import BACKENDS
from autotune.backends.pool import exit_status
from autotune.cli.options import (
    DB_HELP,
    KERNEL_TIMEOUT_HELP,
    Cli,
    checked,
    config_options,
    default_db,
    friendly,
    layout_option,
    named_config,
    narrow_families,
    parse_choices,
    parse_families,
    parse_shape,
    precision_option,
    remeasure_option,
    resolve_config,
    resolve_shape,
    results_options,
    seed_option,
    shape_options,
    with_layout,
)
from autotune.errors import AutotuneError
from autotune.explain.model import PRESETS
from autotune.families import FAMILIES, families_for
from autotune.families.layouts import for_batch, narrow_to
from autotune.search import SAMPLERS
from autotune.space import expand
from autotune.space.devices import PRESETS as DEVICE_PRESETS
from autotune.space.devices import for_device
from autotune.space.devices import preset as device_preset_limits


@click.group(cls=Cli, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="autotune")
def cli() -> None:
    """Code-generating autotuner for FP32 SGEMM (C = A*B, row-major) on NVIDIA GPUs."""


@cli.command()
@shape_options
@click.option("--family", "family_text", help="families to search, comma-separated (default: every family of "
              "--precision)")
@precision_option
@click.option("-p", "--param", "params", multiple=True, metavar="NAME=V1,V2",
              help="search only these values of a parameter (repeat for others), e.g. -p BM=128,256")
@layout_option
@click.option("--batch", type=int, default=1, show_default=True, callback=checked("batch"),
              help="measure strided batches of this many products per launch (cuBLAS's StridedBatched; BLAS=1 "
                   "kernels only, the batch on the grid's z), the key autotune.load() picks batched calls' kernels by")
@click.option("--sampler", type=click.Choice(SAMPLERS), default="tpe-mv", show_default=True,
              help="tpe-mv (multivariate TPE: the fewest trials to the best on the H200 datasets, "
                   "docs/search.md), tpe, random, grid (every valid config in order), qmc (Sobol), "
                   "gp (needs the bench extra)")
@click.option("--trials", type=int, default=60, show_default=True, callback=checked("trials"),
              help="new configs to measure (configs already in the database are reused, not counted)")
@click.option("--timeout", type=float, callback=checked("timeout"), help="stop after this many seconds")
@click.option("--seed", type=int, default=0, show_default=True, callback=checked("seed"),
              help="sampler seed and input seed (0 to 2**32-1)")
@click.option("--device", type=click.IntRange(min=0), help="one CUDA device index (the same as --devices N)")
@click.option("--devices", "devices_text", metavar="0,1",
              help="CUDA devices, one worker each (default: every visible GPU)")
@click.option("--workers", type=int, callback=checked("workers"),
              help="worker processes (default: one per device; 1 on the emulator)")
@click.option("--backend", type=click.Choice(BACKENDS), default="cuda", show_default=True,
              help="cuda: time on the GPU; sim: the CPU emulator (small shapes, times are not GPU times); "
                   "replay: answer from --replay-db (no GPU)")
@click.option("--replay-db", type=click.Path(dir_okay=False),
              help="recorded results database that --backend replay answers from")
@click.option("--storage", metavar="URL|FILE",
              help="keep the Optuna study there and share it: postgresql://USER@HOST/DB for several hosts, "
                   "a journal file for one host (default: in memory, re-learnt from the database)")
@click.option("--study", "study_name", help="the study's name in --storage (default: families-shape-backend-sampler)")
@click.option("--kernel-timeout", type=float, callback=checked("kernel_timeout"), help=KERNEL_TIMEOUT_HELP)
@click.option("--compile-jobs", type=int, metavar="N", callback=checked("compile_jobs"),
              help="CPU processes that compile (NVRTC) and disassemble the next trials' kernels while the GPU "
                   "measures; as many trials are asked ahead (default: one per CPU core but one, at most 8; "
                   "GPU backend only)")
@remeasure_option
@click.option("--db", "db_path", default=default_db, help=DB_HELP)
@friendly
def search(M, N, K, family_text, precision, params, layout, batch, sampler, trials, timeout, seed, device, devices_text, workers, backend,
           replay_db, storage, study_name, kernel_timeout, compile_jobs, remeasure, db_path) -> None:
    """Generate, compile, verify, time and record SGEMM variants; Optuna picks which.
    Ctrl-C stops after the trials in flight and prints the summary (exit status 130)."""
    from autotune.api.python import tune as run_search
    from autotune.backends.pool import parse_devices

    families = narrow_families(for_batch(parse_families(family_text, precision), batch), with_layout(params, layout))
    result = run_search(*resolve_shape(M, N, K), family=families, db=db_path, sampler=sampler, trials=trials,
                        timeout=timeout, seed=seed, backend=backend, devices=parse_devices(devices_text, device),
                        workers=workers, storage=storage, study=study_name, kernel_timeout=kernel_timeout,
                        replay_db=replay_db, compile_jobs=compile_jobs, remeasure=remeasure, batch=batch)
    sys.exit(result.status)


@cli.command()
@shape_options
@click.option("--family", type=click.Choice(sorted(FAMILIES)), help="best of one family only")
@results_options
@precision_option
@click.option("--json", "as_json", is_flag=True, help="print the whole row as JSON")
@click.option("--db", "db_path", default=default_db, help=DB_HELP)
@friendly
def best(M, N, K, family, gpu, backend, precision, as_json, db_path) -> None:
    """The best verified config for a shape under an accuracy contract: its time, TFLOP/s and % of cuBLAS (at a
    shape never measured, the nearest recorded shape's, said on stderr and, with --json, as asked_shape)."""
    from autotune.api.commands import format_row
    from autotune.api.python import best as best_row

    shape = resolve_shape(M, N, K)
    row = best_row(*shape, db=db_path, backend=backend, gpu=gpu, family=family, precision=precision)
    if (row["M"], row["N"], row["K"]) != shape:  # the nearest recorded shape's: say which shape was asked
        row = {**row, "asked_shape": dict(zip("MNK", shape))}
    click.echo(json.dumps(row, indent=2) if as_json else format_row(row))


@cli.command()
@shape_options
@config_options
@layout_option
@seed_option
@click.option("--device", type=click.IntRange(min=0), default=0, show_default=True, help="CUDA device index")
@click.option("--backend", type=click.Choice(["cuda", "sim"]), default="cuda", show_default=True,
              help="cuda: the GPU; sim: the CPU emulator")
@click.option("--kernel-timeout", type=float, callback=checked("kernel_timeout"), help=KERNEL_TIMEOUT_HELP)
@click.option("--again", is_flag=True, help="time each config anew even where the database holds its row (kept beside it)")
@click.option("--db", "db_path", default=default_db, help=DB_HELP)
@friendly
def measure(M, N, K, family, params, result_id, layout, seed, device, backend, kernel_timeout, again, db_path) -> None:
    """Verify and time named configs in a worker process (recorded like search trials).
    -p NAME=V1,V2 measures every combination of the listed values (others at their defaults at the
    shape, as a search's first trial has them)."""
    from autotune.api.commands import measure_command

    if result_id is not None and layout:
        raise AutotuneError("--layout goes with --family: the row that --id names has its own layout")
    params, shape = with_layout(params, layout, family), resolve_shape(M, N, K)
    if family and result_id is None:
        choices = parse_choices(params)
        named, fit = expand(FAMILIES[family], choices), choices  # the rest fitted on the device that measures them
    else:
        config = resolve_config(db_path, family, params, result_id)
        if config is None:
            raise AutotuneError("name a config: --family tiled -p T=32 ..., or --id N")
        named, fit = [config], None  # a recorded config as it is
    measured = measure_command(shape, named, fit, seed, device, db_path, backend, kernel_timeout, again)
    click.echo(measured.text)
    if measured.failed:
        sys.exit(1)


@cli.command()
@shape_options
@config_options
@results_options
@click.option("-o", "--output", help="kernel file (default best.cu, or best.hip); the manifest goes beside it")
@click.option("--lang", type=click.Choice(["cuda", "hip"]), default="cuda", show_default=True,
              help="hip: the same kernel translated to HIP for AMD GPUs (compile-checked, not run)")
@precision_option
@click.option("--db", "db_path", default=default_db, help=DB_HELP)
@friendly
def export(M, N, K, family, params, result_id, gpu, backend, output, lang, precision, db_path) -> None:
    """Write a kernel (default: the best for the shape) as CUDA source plus a JSON manifest, a C++
    header with a host launcher (.h) and a Python launcher (.py) that run it at any shape; with
    --lang hip, HIP source, the manifest and a HIP header."""
    from autotune.api.export import LANGS, export_command

    shape = resolve_shape(M, N, K)
    config = named_config(family, params, result_id)  # a row (--id) is read by the export itself
    paths = export_command(db_path, shape, config, output or f"best{LANGS[lang]}", backend, gpu, lang, precision,
                           row_id=result_id)
    *first, last = [str(p) for p in paths if p is not None]
    click.echo(f"wrote {', '.join(first)} and {last}")


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


@cli.command()
@click.option("--backend", type=click.Choice(["sim", "cuda"]), default="sim", show_default=True,
              help="sim: the CPU emulator (no GPU); cuda: the GPU")
@click.option("--family", "family_text", help="families to verify, comma-separated (default: every family of "
              "--precision)")
@precision_option
@click.option("--limit", type=click.IntRange(min=1), default=12, show_default=True,
              help="variants per family: a sample covering every parameter value")
@click.option("--shape", "shapes", multiple=True, metavar="MxNxK", help="shapes (default: 1x1x1 17x33x9 100x37x129 64x64x64)")
@seed_option
@click.option("--device", type=click.IntRange(min=0), default=0, show_default=True, help="CUDA device index")
@click.option("--json", "as_json", is_flag=True, help="print the rows as JSON")
@friendly
def verify(backend, family_text, precision, limit, shapes, seed, device, as_json) -> None:
    """Check variants against a float64 reference over odd shapes; exit 1 if any fails."""
    from autotune.api.commands import verify_command, verify_table
    from autotune.backends.verify import SHAPES, failures

    chosen = [parse_shape(s) for s in shapes] or list(SHAPES)
    rows = verify_command(backend, parse_families(family_text, precision), limit, chosen, seed, device)
    if as_json:
        click.echo(json.dumps([{**r.__dict__, "shape": list(r.shape), "backend": backend,
                                "error": r.error if math.isfinite(r.error) else None}  # not run: no error (strict JSON)
                               for r in rows], indent=1))
    else:
        click.echo(verify_table(rows))
    if failures(rows):
        sys.exit(1)


@cli.command()
@click.option("--family", type=click.Choice(sorted(FAMILIES)), help="one family only")
@click.option("--device-preset", default="h200", show_default=True,
              help=f"the device the space is sized for: {', '.join(DEVICE_PRESETS)}")
@click.option("-p", "--param", "params", multiple=True, metavar="NAME=V1,V2",
              help="only these values of a parameter (repeat for others), as search -p takes them")
@friendly
def space(family, device_preset, params) -> None:
    """The search space: parameters, values, defaults, constraints and how many configs are valid."""
    from autotune.api.commands import describe_space

    chosen = narrow_families([FAMILIES[family]] if family else list(FAMILIES.values()), params)
    families, refused = for_device(chosen, device_preset_limits(device_preset))
    for line in refused:
        click.echo(f"{line}: no configs")
    for f in families:
        click.echo(describe_space(f, device_preset_limits(device_preset)))


@cli.command()
@config_options
@click.option("--arch", default="sm_90", show_default=True, help="GPU architecture to compile for")
@click.option("--device-preset", "--preset", "preset", type=click.Choice(sorted(PRESETS)), default="h200",
              show_default=True, help="the device the ceiling model is sized for (--preset: its former name)")
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
@config_options
@results_options
@precision_option
@click.option("--device", type=click.IntRange(min=0), default=0, show_default=True, help="CUDA device index")
@click.option("--db", "db_path", default=default_db, help=DB_HELP + "; the profile is stored there")
@friendly
def profile(M, N, K, family, params, result_id, gpu, backend, precision, device, db_path) -> None:
    """Profile one kernel (default: the best for the shape under --precision's contract) with Nsight Compute
    at the shape: sectors per request, shared wavefronts, FFMA, DRAM throughput and stall reasons against the
    model; stored in --db. Set AUTOTUNE_NCU to an ncu that is not on PATH."""
    from autotune.api.profile import profile_command

    config = resolve_config(db_path, family, params, result_id)
    click.echo(profile_command(db_path, resolve_shape(M, N, K), config, result_id, backend, gpu, device, precision))


@cli.command()
@click.option("--db", "db_path", default=default_db, help=DB_HELP)
@click.option("--M", "M", type=int, help="only shapes with this M (default: every shape searched)")
@click.option("--N", "N", type=int, help="only shapes with this N")
@click.option("--K", "K", type=int, help="only shapes with this K")
@click.option("-o", "--output", help="folder for report.md and the PNGs (default: report-<database name>)")
@click.option("--device-preset", "--preset", "preset", type=click.Choice(sorted(PRESETS)), help="the device the ceiling "
              "model is sized for, no GPU used (default: the rows' GPU's, else h200; --preset: its former name)")
@click.option("--gpu", help="GPU name or UUID (default: every GPU in the database)")
@click.option("--arch", default="sm_90", show_default=True, help="architecture for rows that do not record one")
@friendly
def report(db_path, M, N, K, output, preset, gpu, arch) -> None:
    """Write a markdown report with plots of the searches in --db, a section per shape: progress, the
    families tried, each family's best, ceilings against measured, and the flat-in-T study where tiled
    kernels were measured."""
    from autotune.explain.report import report_command

    click.echo(f"wrote {report_command(db_path, (M, N, K), output, preset, gpu, arch)}")


def suite_families(precision: str) -> list[str]:
    """A suite's families unless --family says: the contract's, less naive (it never wins, and a trial
    of it takes seconds at the large shapes)."""
    return [name for name in families_for(precision) if FAMILIES[name].in_suites]


@cli.command()
@click.option("--shapes", "shapes_path", default=str(SUITE_SHAPES), show_default="the package's shape suite",
              help="TOML file of shapes, each with its group (Python 3.11+)")
@click.option("--group", "groups", multiple=True, help="only this group's shapes (repeat for others)")
@click.option("--trials", type=int, default=20, show_default=True, callback=checked("trials"),
              help="new configs per shape")
@click.option("--timeout", type=float, default=60.0, show_default=True, callback=checked("timeout"),
              help="seconds of search per shape")
@click.option("--total-timeout", type=float, callback=checked("total_timeout"),
              help="seconds for the whole suite: a shape gets at most its share of what is left")
@click.option("--family", "family_text",
              help=f"families to search (default: {','.join(suite_families('fp32'))}; with --precision fp32-tc "
                   "the tensor-core families too; naive is left out: it never wins, and a trial of it takes "
                   "seconds at the large shapes)")
@precision_option
@click.option("--backend", type=click.Choice(BACKENDS), default="cuda", show_default=True,
              help="cuda: the GPUs; sim: the CPU emulator (small shapes); replay: answers from --replay-db")
@click.option("--replay-db", type=click.Path(dir_okay=False), help="recorded database for --backend replay")
@click.option("--devices", "devices_text", metavar="0,1",
              help="CUDA devices each shape's search uses, one worker each (default: every visible GPU)")
@remeasure_option
@click.option("--no-tune", is_flag=True, help="tune nothing: write the outputs from --db as it is")
@click.option("--db", "db_path", default=default_db, help=DB_HELP)
@click.option("-o", "--out", default="benchmarks/data", show_default=True, help="folder for the JSON, .md and .png")
@friendly
def suite(shapes_path, groups, trials, timeout, total_timeout, family_text, precision, backend, replay_db, devices_text,
          remeasure, no_tune, db_path, out) -> None:
    """Tune every shape of a shapes file with one budget; write each shape's best against cuBLAS (same
    process) and its roofline as JSON, a markdown table and a plot."""
    from autotune.api.suite import SuiteOptions, run_suite
    from autotune.backends.pool import parse_devices

    families = parse_families(family_text or ",".join(suite_families(precision)), precision)
    sys.exit(run_suite(SuiteOptions(shapes_path, db_path, out, narrow_to(families, {}), trials, timeout,
                                    total_timeout, kind=backend, devices=parse_devices(devices_text, None),
                                    replay_db=replay_db, groups=groups, tune=not no_tune, precision=precision,
                                    remeasure=remeasure)))


@cli.command()
@click.option("--shapes", "shapes_path", help="a TOML shapes file (autotune/api/shapes.toml's format): each shape, NN")
@click.option("--M-range", "m_range", metavar="LO:HI", help="M from LO to HI (the powers of two between) at --N and --K")
@click.option("--N", "N", type=int, help="with --M-range")
@click.option("--K", "K", type=int, help="with --M-range")
@click.option("--layout", type=click.Choice(["NN", "NT", "TN", "TT"]),
              help="with --M-range: T, that operand stored transposed (NT: nn.Linear's x W^T; default NN)")
@click.option("--module", "module_spec", metavar="MOD:FACTORY",
              help="a function returning a PyTorch model: the forward product of each of its nn.Linear layers")
@click.option("--batch", "batch_text", metavar="32,64", help="with --module: rows of x (default 1)")
@click.option("--training", is_flag=True, help="with --module: the two backward products too (dX = dY W, dW = dY^T X)")
@click.option("--family", "family_text", help="families to search, comma-separated (default: the suite's)")
@click.option("-p", "--param", "params", multiple=True, metavar="NAME=V1,V2",
              help="search only these values of a parameter (repeat for others), e.g. -p CS=1")
@click.option("--budget", type=float, default=600.0, show_default=True, help="seconds of searching for all products")
@click.option("--trials", type=int, default=20, show_default=True, callback=checked("trials"),
              help="new configs per product at most")
@click.option("--backend", type=click.Choice(["cuda", "sim"]), default="cuda", show_default=True,
              help="cuda: the GPU; sim: the CPU emulator (small shapes)")
@click.option("--db", "db_path", default=default_db, help=DB_HELP)
@click.option("--json", "json_path", help="also write the per-product report here (a new file, or an earlier report)")
@friendly
def cover(shapes_path, m_range, N, K, layout, module_spec, batch_text, training, family_text, params, budget, trials,
          backend, db_path, json_path) -> None:
    """Tune the products a workload makes within one budget; say per product what load() now runs and its gain."""
    from autotune.api import cover as c

    c.check_workload(shapes_path, m_range, module_spec, N=N, K=K, layout=layout, batch=batch_text, training=training)
    if json_path:
        c.check_json(json_path, db_path, shapes_path)
    products = (c.from_file(shapes_path) if shapes_path else c.from_range(m_range, N, K, layout or "NN") if m_range
                else c.from_module(module_spec, c.parse_ints(batch_text or "1", "--batch"), training))
    families = narrow_families(parse_families(family_text or ",".join(suite_families("fp32"))), params)
    stop = threading.Event()
    rows = c.run_cover(c.CoverOptions(products, db_path, families, budget, trials, kind=backend), stop)
    click.echo("\n".join(c.summary_lines(rows)))
    if json_path:
        c.write_json(rows, json_path)
    sys.exit(exit_status(stop, True) if stop.is_set() else 0)


def main() -> None:
    cli(prog_name="autotune")

