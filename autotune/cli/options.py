"""What every command shares: the option decorators, parsing of shapes, configs and families,
and errors as one line on stderr with exit status 2 (`friendly`, `Cli`)."""
from __future__ import annotations

import sqlite3
import sys
from contextlib import contextmanager
from functools import wraps
from typing import Iterator

import click

from autotune import store
from autotune.api import checks
from autotune.cli import interrupted
from autotune.errors import AutotuneError
from autotune.families import FAMILIES, PRECISIONS, config_of_row, families_for
from autotune.families.layouts import LAYOUTS, families_with_transposes, layout_choices, narrow_to
from autotune.space import Config, check_shape, make_config

DB_HELP = "SQLite results database (default: $AUTOTUNE_DB or db/autotune.sqlite)"


def default_db() -> str:
    return store.default_path()


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
        except KeyboardInterrupt:  # before a command's own handler was set: not click's "Aborted!" and status 1
            interrupted()
    return wrapper


class OneLineUsageError(click.UsageError):
    """click's usage errors (a bad option value, an unknown option) as one line, like ours."""

    def show(self, file=None) -> None:
        command = self.ctx.command_path if self.ctx else "autotune"
        click.echo(f"error: {self.format_message()} (see `{command} --help`)", err=True)


# click 8.2 and later: a group called with nothing shows its help on stderr and exits 2 (earlier: exits 0 after it)
NoArgsIsHelp = getattr(click.exceptions, "NoArgsIsHelpError", OneLineUsageError)


@contextmanager
def _one_line() -> Iterator[None]:
    try:
        yield
    except (OneLineUsageError, NoArgsIsHelp):  # the latter: a bare `autotune`, whose help is the answer
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


def checked(name: str):
    """A click callback applying the API's rule for the argument `name` (api.checks), so that the
    command line and autotune.tune refuse the same values."""
    def callback(ctx, param, value):
        why = checks.problem(name, value)
        if why:
            raise click.BadParameter(f"{value!r} {why}")
        return value
    return callback


def seed_option(fn, help: str = "input seed"):
    return click.option("--seed", type=int, default=0, show_default=True, callback=checked("seed"), help=help)(fn)


def shape_options(fn):
    fn = click.option("--K", "K", type=int, help="inner dimension (default: M)")(fn)
    fn = click.option("--N", "N", type=int, help="columns of C (default: M)")(fn)
    return click.option("--M", "M", type=int, required=True, help="rows of C")(fn)


def config_options(fn):
    fn = click.option("--id", "result_id", type=int, help="a result id from the database")(fn)
    fn = click.option("-p", "--param", "params", multiple=True, metavar="NAME=VALUE",
                      help="a parameter of the family, one -p per parameter (left-out ones take defaults; "
                           "measure also takes NAME=V1,V2 and measures every combination)")(fn)
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
    return narrow_to(families, parse_choices(params))


def with_layout(params: tuple[str, ...], layout: str | None, family: str | None = None) -> tuple[str, ...]:
    """--layout NT is -p TA=0 -p TB=1 (a -p that says the same is kept once; one that says otherwise is refused).
    With the family named (measure), one that reads A and B only as stored is refused a transposed layout."""
    if layout is None:
        return params
    given, wanted = parse_choices(params), layout_choices(layout)
    for name, values in wanted.items():
        if name in given and given[name] != values:
            raise AutotuneError(f"--layout {layout} means -p {name}={values[0]}, and -p {name}={','.join(given[name])} "
                                f"says otherwise; give one of them")
    if family in FAMILIES and layout != "NN" and "TA" not in {p.name for p in FAMILIES[family].params}:
        raise AutotuneError(f"family {family} reads A and B as stored (--layout NN) only; the register-blocked "
                            f"families read transposed operands: --family "
                            f"{','.join(f.name for f in families_with_transposes())}")
    return (*params, *(f"{name}={values[0]}" for name, values in wanted.items() if name not in given))


def layout_option(fn):
    return click.option("--layout", type=click.Choice(list(LAYOUTS)),
                        help="only kernels of these operands: NN = A and B as stored row-major, T = that operand "
                             "stored transposed (NT: nn.Linear's x * W^T); the same as -p TA=0/1 -p TB=0/1")(fn)


def remeasure_option(fn):
    return click.option("--remeasure", type=click.Choice(checks.REMEASURE),
                        help="failed: measure again the configs whose recorded result is compile_error, wrong, "
                             "launch_error or timeout (after fixing what made them fail); stale: those whose recorded "
                             "row was measured from another source than the config renders today (after a template "
                             "changed), the best of them first; the new row is kept beside the old one")(fn)


def resolve_config(db_path: str, family: str | None, params: tuple[str, ...], result_id: int | None) -> Config | None:
    config = named_config(family, params, result_id)
    if result_id is not None:
        return config_of_row(store.result_by_id(store.open_readonly(db_path), result_id))
    return config


def named_config(family: str | None, params: tuple[str, ...], result_id: int | None = None) -> Config | None:
    """The config --family and -p name (None: none named), refused beside --id."""
    if result_id is not None and (family or params):
        raise AutotuneError("give either --id or --family/-p, not both")
    if params and not family:
        raise AutotuneError("-p needs --family (for example --family tiled -p T=32)")
    return make_config(FAMILIES[family], parse_params(params)) if family else None


def parse_families(text: str | None, precision: str = "fp32") -> list:
    """The families named (default: every family of the accuracy contract). A tensor-core family
    is refused under the fp32 contract: its error is FP32-class, its arithmetic is not FP32."""
    if text is None:
        return [FAMILIES[n] for n in families_for(precision)]
    names = list(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))  # each once, in order
    unknown = [n for n in names if n not in FAMILIES]
    if unknown or not names:
        raise AutotuneError(f"unknown family {','.join(unknown) or text!r}; choose from {', '.join(FAMILIES)}")
    outside = [n for n in names if n not in families_for(precision)]
    if outside:
        raise AutotuneError(f"{', '.join(outside)} multiplies on tensor cores (TF32 or INT8 parts), outside the "
                            f"{precision} contract: add --precision fp32-tc")
    return [FAMILIES[n] for n in names]


PRECISION_HELP = ("accuracy contract: fp32 (FP32 arithmetic, the default families) or fp32-tc (also the "
                  "tensor-core families: TF32 parts on tensor cores, FP32-class error)")


def precision_option(fn):
    return click.option("--precision", type=click.Choice(PRECISIONS), default="fp32", show_default=True,
                        help=PRECISION_HELP)(fn)


KERNEL_TIMEOUT_HELP = ("seconds one kernel launch may take before the watchdog stops it and records timeout "
                       "(default: 1000x cuBLAS at the shape, at least 1 s; on the emulator 60 s)")


def results_options(fn):
    """Whose results a reading command picks from: one backend, one GPU model."""
    fn = click.option("--gpu", help="GPU name or UUID (default: the fastest on any GPU in the database)")(fn)
    return click.option("--backend", type=click.Choice(checks.BACKENDS), default="cuda",
                        show_default=True, help="whose results: the GPU's, the emulator's or a replay's "
                                                "(never mixed)")(fn)


def parse_shape(text: str) -> tuple[int, int, int]:
    parts = text.lower().split("x")
    if len(parts) != 3 or not all(p.strip().isdigit() for p in parts):
        raise AutotuneError(f"--shape {text!r} is not MxNxK (for example 17x33x9)")
    shape = tuple(int(p) for p in parts)
    check_shape(*shape)
    return shape  # type: ignore[return-value]
