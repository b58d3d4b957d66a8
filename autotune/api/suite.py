"""`autotune suite`: tune every shape of a shapes file (autotune/api/shapes.toml) with one stated
budget, each shape an ordinary search into one results database, then write what was found
(explain.suite): JSON, a markdown table and a PNG, rewritten after every shape so that a run
stopped part-way still leaves its numbers.

A shape whose search fails (bad for the backend, say) is reported and the suite goes on; a
missing GPU stops it at once. The shapes file is TOML, read with tomllib (Python 3.11+).
"""
from __future__ import annotations

import dataclasses
import subprocess
import sys
import threading
import time
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autotune import store
from autotune.api.commands import Kept, SearchOptions, check_replay_db, preflight, search_command
from autotune.backends.kinds import backend_kind
from autotune.backends.pool import exit_status, stop_on_signals, visible_devices
from autotune.errors import AutotuneError, EnvironmentFault
from autotune.explain import require_matplotlib
from autotune.explain.model import PRESETS, preset_for
from autotune.explain.report import check_folder
from autotune.explain.suite import Suite, SuiteShape, suite_device, suite_rows, summary_lines, write_suite
from autotune.space import Family, check_shape
from autotune.space.devices import gpu_tag

SHAPE_KEYS = {"M", "N", "K", "group"}


@dataclass(frozen=True)
class SuiteOptions:
    shapes_path: str
    db_path: str
    out: str  # folder for the JSON, markdown and PNG
    families: list[Family]
    trials: int = 20  # new measurements per shape
    timeout: float = 60.0  # seconds of search per shape
    total_timeout: float | None = None  # seconds for the whole suite: later shapes get what is left
    sampler: str = "tpe-mv"
    seed: int = 0
    kind: str = "cuda"
    devices: tuple[int, ...] | None = None
    replay_db: str | None = None
    preset: str | None = None  # the device spec of the roofline (None: the GPU's own, explain.model.preset_for)
    groups: tuple[str, ...] = ()  # only these groups of the file (all when empty)
    tune: bool = True  # False: write the outputs from the database as it is
    precision: str = "fp32"  # the contract whose rows count (fp32-tc: the tensor-core families' too)
    remeasure: str | None = None  # each shape's search's --remeasure ("stale": after a template changed)

    def budget(self) -> dict[str, Any]:
        """What the suite spent per shape, and on what: `devices` are the GPUs each search used (one
        worker each), so suite times on one GPU and on several can be told apart. With --no-tune it spent
        nothing: the budget says so (`tuned`: false) rather than naming trials that never ran."""
        if not self.tune:
            return {"tuned": False, "families": [f.name for f in self.families], "precision": self.precision}
        return {"trials": self.trials, "timeout_s": self.timeout, "total_timeout_s": self.total_timeout,
                "sampler": self.sampler, "families": [f.name for f in self.families], "precision": self.precision,
                "seed": self.seed, "remeasure": self.remeasure,
                "devices": list(self.devices) if self.devices is not None else None}


# --------------------------------------------------------------------------- the shapes file

def _load_toml(path: Path) -> dict[str, Any]:
    try:
        import tomllib
    except ImportError:  # Python 3.10
        raise AutotuneError("reading a shapes file needs Python 3.11 or later (tomllib)") from None
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except OSError as exc:
        raise AutotuneError(f"cannot read shapes file {path}: {exc.strerror}; pass --shapes with a TOML file") from None
    except tomllib.TOMLDecodeError as exc:
        raise AutotuneError(f"shapes file {path} is not valid TOML: {exc}") from None
    except UnicodeDecodeError:  # TOML is UTF-8 text; tomllib raises this, not TOMLDecodeError, for other bytes
        raise AutotuneError(f"shapes file {path} is not UTF-8 text; pass --shapes with a TOML file") from None


def _shape(path: Path, i: int, entry: Any) -> SuiteShape:
    where = f"shapes file {path}, shape {i + 1}"
    if not isinstance(entry, dict):
        raise AutotuneError(f"{where} is not a table like {{ group = \"large\", M = 4096, N = 4096, K = 4096 }}")
    missing, unknown = SHAPE_KEYS - set(entry), set(entry) - SHAPE_KEYS
    if missing or unknown:
        what = "; ".join(p for p in (f"missing {', '.join(sorted(missing))}" if missing else "",
                                     f"unknown {', '.join(sorted(unknown))}" if unknown else "") if p)
        raise AutotuneError(f"{where}: {what} (each shape has exactly M, N, K and group)")
    if not isinstance(entry["group"], str) or not entry["group"].strip():
        raise AutotuneError(f"{where}: group must be a non-empty string")
    try:
        check_shape(entry["M"], entry["N"], entry["K"])
    except AutotuneError as exc:
        raise AutotuneError(f"{where}: {exc}") from None
    return SuiteShape(entry["M"], entry["N"], entry["K"], entry["group"].strip())


def read_shapes(path: str | Path, groups: tuple[str, ...] = ()) -> list[SuiteShape]:
    """The file's `shapes` array, in order; only the named groups when `groups` is given."""
    path = Path(path)
    entries = _load_toml(path).get("shapes")
    if not isinstance(entries, list) or not entries:
        raise AutotuneError(f"shapes file {path} has no `shapes = [ ... ]` array of shapes")
    shapes = [_shape(path, i, e) for i, e in enumerate(entries)]
    seen: set[tuple[int, int, int]] = set()
    for s in shapes:
        if s.shape in seen:
            raise AutotuneError(f"shapes file {path} lists {s.label} twice")
        seen.add(s.shape)
    known = sorted({s.group for s in shapes})
    unknown = [g for g in groups if g not in known]
    if unknown:
        raise AutotuneError(f"no group {', '.join(unknown)} in {path}; its groups: {', '.join(known)}")
    return [s for s in shapes if not groups or s.group in groups]


# --------------------------------------------------------------------------- running it

def git_commit(folder: Path = Path(__file__).resolve().parent) -> str | None:
    """The short commit of the git checkout the folder lies in (by default the package's own, when it runs from
    one), marked `+changes` where tracked files differ from it: a GPU node's copy of a working tree may carry an
    older .git, whose HEAD alone would name sources that did not run. None outside a checkout."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=folder, capture_output=True, text=True,
                              timeout=10)
        if head.returncode != 0 or not head.stdout.strip():
            return None
        same = subprocess.run(["git", "diff", "--quiet", "HEAD", "--"], cwd=folder, capture_output=True,
                              timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return None
    return head.stdout.strip() + ("" if same else "+changes")


def stem(device: str | None, kind: str) -> str:
    """shape-suite-h200 for a GPU run (space.devices.gpu_tag); the emulator's and replays' names say so (never a
    GPU's file)."""
    name = gpu_tag(device) if device else ""
    tag = name if backend_kind(kind).on_gpus and name else "-".join(p for p in (kind, name) if p)
    return f"shape-suite-{tag}"


def check_backend(o: SuiteOptions, shapes: list[SuiteShape]) -> None:
    """What can be refused before anything starts: the database path, a missing GPU, the replay
    dataset, the emulator's size limit."""
    store.check_path(o.db_path)
    preflight(o.families, o.kind)
    if backend_kind(o.kind).on_gpus and o.devices is None:
        visible_devices()  # no GPU: one error now, not one per shape
    check_replay_db(o.kind, o.replay_db, o.db_path)
    if backend_kind(o.kind).emulated:
        from autotune.backends.sim.backend import check_emulated

        check_emulated([s.shape for s in shapes])


def shape_timeout(o: SuiteOptions, started: float, left: int) -> float | None:
    """This shape's seconds: --timeout, or its share of what --total-timeout leaves (None: spent)."""
    if o.total_timeout is None:
        return o.timeout
    remaining = o.total_timeout - (time.monotonic() - started)
    return min(o.timeout, remaining / left) if remaining > 1.0 else None


def write(o: SuiteOptions, shapes: list[SuiteShape], seconds: dict, errors: dict, tuning_s: float | None) -> Suite:
    db = store.open_db(o.db_path) if o.tune else store.open_readonly(o.db_path)
    try:
        device = suite_device(db, shapes, o.kind)
        preset = o.preset or preset_for(device)
        spec = PRESETS[preset]
        suite = Suite(device, o.kind, preset, spec, o.budget(), git_commit(), tuning_s,
                      suite_rows(db, shapes, o.kind, device, spec, seconds, errors, o.precision))
    finally:
        db.close()
    try:
        write_suite(suite, Path(o.out), stem(device, o.kind))
    except OSError as exc:  # a read-only file of an earlier suite there, a full disk: the database holds every row
        raise AutotuneError(f"cannot write the suite's outputs into {o.out}: {exc.strerror or exc} ({exc.filename}); "
                            f"choose another -o, the rows are in {o.db_path}") from None
    return suite


def tune_shape(o: SuiteOptions, s: SuiteShape, timeout: float, stop: threading.Event,
               kept: Kept | None = None) -> str | None:
    """One shape's search; returns why it failed (None when it ran)."""
    print(f"autotune: suite: {s.label} ({s.group}), {o.trials} new trials, at most {timeout:.0f} s",
          file=sys.stderr, flush=True)
    options = SearchOptions(shape=s.shape, families=o.families, db_path=o.db_path, sampler=o.sampler,
                            trials=o.trials, timeout=timeout, seed=o.seed, kind=o.kind, devices=o.devices,
                            replay_db=o.replay_db, remeasure=o.remeasure)
    try:
        search_command(options, stop, kept)
    except EnvironmentFault:
        raise  # no GPU, an unusable cache, no compiler: the same for every shape, so stop now
    except AutotuneError as exc:
        print(f"autotune: suite: {s.label}: {exc}", file=sys.stderr, flush=True)
        return str(exc)
    return None


def run_suite(o: SuiteOptions, stop: threading.Event | None = None) -> int:
    """Tune each shape, then print the summary. Exit status: 0; 1 when a shape's search failed;
    128 + the signal's number when a signal stopped the suite (its outputs are still written)."""
    stop = stop or threading.Event()
    check_folder(Path(o.out), "suite")  # the outputs are written after the first shape: a bad -o must not cost one
    shapes = read_shapes(o.shapes_path, o.groups)
    require_matplotlib("autotune suite")  # the plot is drawn after the last shape's tuning
    seconds: dict[SuiteShape, float] = {}
    errors: dict[SuiteShape, str] = {}
    failed = False
    started = time.monotonic()
    if o.tune:
        check_backend(o, shapes)
        if backend_kind(o.kind).on_gpus and o.devices is None:  # every visible GPU: say which, in the outputs' budget
            o = dataclasses.replace(o, devices=visible_devices())
        kept = Kept()  # one worker per GPU and one compile pool for every shape: their starts are paid once
        with stop_on_signals(stop), closing(kept):
            for i, s in enumerate(shapes):
                timeout = shape_timeout(o, started, len(shapes) - i)
                if stop.is_set() or timeout is None:
                    errors[s] = "not tuned: " + ("the suite was stopped" if stop.is_set()
                                                 else "the suite's --total-timeout was spent")
                    continue
                t0 = time.monotonic()
                error = tune_shape(o, s, timeout, stop, kept)
                seconds[s] = round(time.monotonic() - t0, 2)  # a shape on a kept worker can take 0.05 s
                if error:
                    errors[s], failed = error, True
                write(o, shapes, seconds, errors, round(time.monotonic() - started, 1))
    suite = write(o, shapes, seconds, errors, round(time.monotonic() - started, 1) if o.tune else None)
    tuned = sum(s not in errors for s in seconds)
    took = f"tuned {tuned} shape(s) in {suite.tuning_s:.0f} s; " if suite.tuning_s is not None else ""
    print("\n".join([*summary_lines(suite), f"{took}wrote {Path(o.out) / stem(suite.device, o.kind)}.json, "
                     f".md and .png"]), flush=True)
    return exit_status(stop, True) if stop.is_set() else 1 if failed else 0
