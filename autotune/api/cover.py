"""`autotune cover`: tune ahead of time the products a workload makes, within one stated budget, and
say per product what load() will now run there and what it gained over cuBLAS.

The products come from a shapes file (autotune/api/shapes.toml's format), from a range of M at fixed N
and K, or from a PyTorch module's nn.Linear layers at given batch sizes: the forward x·Wᵀ (NT) and,
with training, the two backward products dX = dY·W (NN) and dW = dYᵀ·X (TN), which autotune.torch's
operator computes through the same dispatcher. Each product is an ordinary search of its layout into
one results database; the budget is shared out as the suite's --total-timeout is (each product gets
an equal share of what is left).
"""
from __future__ import annotations

import importlib
import json
import math
import os
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autotune import store
from autotune.api.commands import Kept, SearchOptions, preflight, search_command
from autotune.api.dispatch import wins_at_its_shape
from autotune.api.suite import read_shapes
from autotune.backends.outcome import OK
from autotune.backends.pool import stop_on_signals
from autotune.errors import AutotuneError, EnvironmentFault
from autotune.families.layouts import layout_choices, layout_name, narrow_to
from autotune.space import Family, Shape, check_shape, shape_text


@dataclass(frozen=True)
class Product:
    """One product a workload makes: its shape, layout (NN, NT, TN, TT) and where it comes from."""

    shape: Shape
    layout: str
    origin: str

    @property
    def label(self) -> str:
        return f"{shape_text(self.shape)} {self.layout}"


def from_file(path: str) -> list[Product]:
    return [Product(s.shape, "NN", s.group) for s in read_shapes(path)]


def from_range(m_range: str, N: int, K: int, layout: str = "NN") -> list[Product]:
    """M from LO to HI (`LO:HI`), every power of two between and both ends."""
    try:
        lo, hi = (int(x) for x in m_range.split(":"))
    except ValueError:
        raise AutotuneError(f"--M-range {m_range!r} is not LO:HI (two whole numbers, e.g. 1:4096)") from None
    if not 1 <= lo <= hi:
        raise AutotuneError(f"--M-range {m_range}: need 1 <= LO <= HI")
    ms = sorted({lo, hi, *(2 ** p for p in range(math.ceil(math.log2(lo)), math.floor(math.log2(hi)) + 1))})
    out = [Product((M, N, K), layout, f"M in {m_range}") for M in ms]
    for p in out:
        check_shape(*p.shape)
    return out


def check_workload(shapes_path: str | None, m_range: str | None, module_spec: str | None, **options: Any) -> None:
    """One source of products, and only the options that go with it (none silently ignored)."""
    given = [x for x in (shapes_path, m_range, module_spec) if x]
    if len(given) != 1:
        raise AutotuneError("give one of --shapes FILE, --M-range LO:HI (with --N and --K), --module MOD:FACTORY")
    if m_range and (options["N"] is None or options["K"] is None):
        raise AutotuneError("--M-range needs --N and --K")
    sources = {"--M-range": m_range, "--module": module_spec}
    stray = [name for name, value in options.items() if value not in (None, False) and not sources[GOES_WITH[name]]]
    if stray:
        raise AutotuneError(f"--{stray[0]} goes with {GOES_WITH[stray[0]]}; it would be ignored here")


# The options that only one source of products reads
GOES_WITH = {"N": "--M-range", "K": "--M-range", "layout": "--M-range", "batch": "--module", "training": "--module"}


def parse_ints(text: str, option: str) -> list[int]:
    """--batch 32,64: whole numbers, each at least 1."""
    try:
        values = [int(x) for x in text.split(",")]
    except ValueError:
        raise AutotuneError(f"{option} {text!r} is not a comma-separated list of whole numbers") from None
    if any(v < 1 for v in values):
        raise AutotuneError(f"{option} {text!r}: each value must be at least 1")
    return values


def _model_of(spec: str) -> Any:
    """The torch.nn.Module that `pkg.mod:factory` returns. The user's code may fail in any way while it is
    imported or called (a syntax error, an exception of its own): that is one line naming it, not our traceback."""
    module_name, _, attr = spec.partition(":")
    hint = "pass MODULE:FACTORY, a function of no arguments returning the model"
    try:
        factory = getattr(importlib.import_module(module_name), attr or "model")
    except Exception as exc:  # noqa: BLE001  (ImportError, AttributeError, or the module's own error)
        raise AutotuneError(f"--module {spec}: {type(exc).__name__}: {exc}; {hint}") from None
    if not callable(factory):
        raise AutotuneError(f"--module {spec}: {attr or 'model'} is a {type(factory).__name__}, not a function; {hint}")
    try:
        model = factory()
    except Exception as exc:  # noqa: BLE001
        raise AutotuneError(f"--module {spec}: calling {attr or 'model'}() raised {type(exc).__name__}: {exc}; "
                            f"{hint}") from None
    import torch

    if not isinstance(model, torch.nn.Module):
        raise AutotuneError(f"--module {spec}: {attr or 'model'}() returned a {type(model).__name__}, not a "
                            f"torch.nn.Module; {hint}")
    return model


def from_module(spec: str, batches: list[int], training: bool) -> list[Product]:
    """The nn.Linear layers of the module that `pkg.mod:factory` returns (called with no arguments)."""
    import torch

    model = _model_of(spec)
    layers = [(name, m) for name, m in model.named_modules() if isinstance(m, torch.nn.Linear)]
    if not layers:
        raise AutotuneError(f"--module {spec}: the model has no torch.nn.Linear layer")
    out: dict[tuple[Shape, str], Product] = {}
    for batch in batches:
        for name, layer in layers:
            i, o = layer.in_features, layer.out_features
            products = [((batch, o, i), "NT")]  # y = x W^T, W stored out x in
            if training:  # dX = dY W (batch x in), dW = dY^T X (out x in, dY stored batch x out)
                products += [((batch, i, o), "NN"), ((o, i, batch), "TN")]
            for shape, layout in products:
                out.setdefault((shape, layout), Product(shape, layout, f"{name} at batch {batch}"))
    return list(out.values())


# Each product's search builds its worker's backend at the shape and times cuBLAS there before its first trial.
# With the worker kept from product to product, a search of one trial took 1.5 s a product on an H100 (27 products
# in 40.9 s; 78.6 s when each product started a worker of its own: benchmarks/data/cover-rate-1-trial-h100.json).
# A budget that gives a product less than this is refused rather than spent on those starts.
MIN_SHARE_S = 2.5


@dataclass(frozen=True)
class CoverOptions:
    products: list[Product]
    db_path: str
    families: list[Family]
    budget_s: float  # seconds of searching for all the products together
    trials: int = 20  # new measurements per product at most
    kind: str = "cuda"
    seed: int = 0
    devices: tuple[int, ...] | None = None


def run_cover(o: CoverOptions, stop: threading.Event | None = None) -> list[dict[str, Any]]:
    """Search each product in turn (an equal share of the budget left), then report each."""
    if o.budget_s <= 0 or not math.isfinite(o.budget_s):
        raise AutotuneError(f"--budget {o.budget_s} must be a positive number of seconds")
    if o.budget_s < MIN_SHARE_S * len(o.products):
        raise AutotuneError(f"--budget {o.budget_s:g} gives each of the {len(o.products)} products "
                            f"{o.budget_s / len(o.products):.1f} s, and a product's search takes about 1.5 s to time "
                            f"cuBLAS and its first trial, {MIN_SHARE_S:g} s with a second; give --budget {math.ceil(MIN_SHARE_S * len(o.products))} or "
                            f"more, or fewer products")
    store.check_path(o.db_path)
    preflight(o.families, o.kind)
    stop = stop or threading.Event()
    kept = Kept()  # one worker per GPU and one compile pool for all the products: their starts are paid once
    try:
        with stop_on_signals(stop):  # Ctrl-C: the product in flight ends its trials, the report covers what was done
            _search_each(o, stop, kept)
    finally:
        kept.close()
    return report(o.db_path, o.products, o.kind)


def _search_each(o: CoverOptions, stop: threading.Event, kept: Kept) -> None:
    started = time.monotonic()
    for i, p in enumerate(o.products):
        left = o.budget_s - (time.monotonic() - started)
        if left < 1.0 or stop.is_set():
            why = "stopped by a signal" if stop.is_set() else "budget spent"
            print(f"autotune: cover: {why} after {i} of {len(o.products)} products", file=sys.stderr)
            break
        share = left / (len(o.products) - i)
        print(f"autotune: cover: {p.label} ({p.origin}), at most {share:.0f} s", file=sys.stderr, flush=True)
        families = narrow_to(o.families, layout_choices(p.layout))
        options = SearchOptions(shape=p.shape, families=families, db_path=o.db_path, trials=o.trials,
                                timeout=share, seed=o.seed, kind=o.kind, devices=o.devices)
        try:
            search_command(options, stop, kept)
        except EnvironmentFault:
            raise  # no GPU, an unusable cache, no compiler: the same for every product, so stop now
        except AutotuneError as exc:
            print(f"autotune: cover: {p.label}: {exc}", file=sys.stderr, flush=True)


def report(db_path: str, products: list[Product], kind: str = "cuda") -> list[dict[str, Any]]:
    """Per product: the fastest verified kernel of its layout, cuBLAS's time beside it, and whether
    load() runs the kernel (api.dispatch.wins_at_its_shape) or cuBLAS."""
    # none where it was stopped before its first search made the database: nothing measured
    db = store.open_readonly(db_path) if Path(db_path).exists() else None
    rows = []
    try:
        for p in products:
            found = [r for r in store.results(db, p.shape, kind, None, OK)
                     if layout_name(r) == p.layout and not r.get("BLAS")] if db is not None else []
            best = min(found, key=lambda r: r["time_ms"]) if found else None
            cublas = best.get("cublas_ms") if best else None
            rows.append({"M": p.shape[0], "N": p.shape[1], "K": p.shape[2], "layout": p.layout, "origin": p.origin,
                         "kernel": best["kernel"] if best else None, "ms": best["time_ms"] if best else None,
                         "cublas_ms": cublas, "gain": cublas / best["time_ms"] if best and cublas else None,
                         "runs": "kernel" if best and wins_at_its_shape(best) else "cuBLAS"})
    finally:
        if db is not None:
            db.close()
    return rows


def summary_lines(rows: list[dict[str, Any]]) -> list[str]:
    """A table, then the geometric mean of what load() will run over cuBLAS (1.0 where cuBLAS runs)."""
    lines = [f"{'product':24s} {'runs':7s} {'ms':>9s} {'cuBLAS ms':>9s} {'gain':>6s}  kernel"]
    gains = []
    for r in rows:
        gain = r["gain"] if r["runs"] == "kernel" else 1.0
        gains.append(gain)
        ms = f"{r['ms']:.4f}" if r["ms"] else "-"
        cublas = f"{r['cublas_ms']:.4f}" if r["cublas_ms"] else "-"
        lines.append(f"{r['M']}x{r['N']}x{r['K']} {r['layout']:<8s}"[:24].ljust(24) +
                     f" {r['runs']:7s} {ms:>9s} {cublas:>9s} {gain:6.3f}  {r['kernel'] or '-'}")
    if gains:
        geo = math.exp(sum(math.log(g) for g in gains) / len(gains))
        unmeasured = sum(r["kernel"] is None for r in rows)
        lines.append(f"{len(rows)} products; load() runs a tuned kernel at {sum(r['runs'] == 'kernel' for r in rows)}; "
                     f"geometric mean over cuBLAS (GPU time, 1.0 where cuBLAS runs) {geo:.3f}"
                     + (f"; no kernel verified at {unmeasured} (the budget spent, or every trial failed)"
                        if unmeasured else ""))
    return lines


def check_json(path: str, *inputs: str | None) -> None:
    """Refuse, before any tuning, a --json path that cannot be written or that holds what the tool did not write
    (the results database, the shapes file, any file but an earlier cover's report)."""
    target = Path(path)
    if any(i and Path(i).resolve() == target.resolve() for i in inputs):
        raise AutotuneError(f"--json {path} is one of the command's own inputs; name a new file for the report")
    if target.is_dir():
        raise AutotuneError(f"--json {path} is a folder; name a file in it for the report")
    if not target.parent.is_dir():
        raise AutotuneError(f"--json {path}: the folder {target.parent} does not exist; create it or name another file")
    if target.exists():
        try:
            earlier = json.loads(target.read_text())
        except (OSError, UnicodeDecodeError, ValueError):
            earlier = None
        if not (isinstance(earlier, dict) and set(earlier) == {"products"}):
            raise AutotuneError(f"--json {path} exists and is not a report of autotune cover; it was left as it is: "
                                f"name a new file")
    if not os.access(target if target.exists() else target.parent, os.W_OK):
        raise AutotuneError(f"--json {path} cannot be written; name a file in a folder you can write")


def write_json(rows: list[dict[str, Any]], path: str) -> None:
    try:
        Path(path).write_text(json.dumps({"products": rows}, indent=1) + "\n")
    except OSError as exc:  # the folder changed since check_json, a full disk
        raise AutotuneError(f"cannot write --json {path}: {exc.strerror or exc}; the table above holds the same") from None
