"""A backend that answers trials from a recorded results database instead of a GPU.

Search strategies can then be run and compared on a machine without a GPU, in CI, and
deterministically: the same config always gets the same recorded answer.

What a trial gets:
- a config recorded as ok, wrong, compile_error or launch_error: the same status, reason,
  error and (for ok) the same median/min/max time, repetitions and watts;
- a config the dataset never measured: status `unrecorded` ("not in the recorded dataset").
  It is not a failure of the kernel, so it gets its own status rather than launch_error;
  like every status but ok it can never be best. Refused (invalid) configs never reach a
  backend: the constraints are re-checked by search.measure.evaluate() as on a GPU.

Configs are matched by kernel name, i.e. by family and parameters, not by source hash: the
templates evolve, and a replay asks "what did this config measure", not "this exact code".

Simulated seconds, what a trial would have cost on the GPU (`trial_seconds`):
    OVERHEAD_S + (reps + WARMUP_RUNS) * time_ms / 1000
OVERHEAD_S covers render, the wait for the compile pool, the correctness runs and the search's
own work: a new trial's recorded t_trial_s less its kernel runs, about 0.3 s on the H200
(docs/measuring.md gives the measurements). A trial that is refused or answered from the
database costs nothing.
"""
from __future__ import annotations

import sqlite3
from pathlib import Path
from statistics import median

from autotune.backends.base import Backend
from autotune.backends.outcome import OK, UNRECORDED, Outcome, Timing
from autotune.errors import AutotuneError, SpaceError
from autotune.families import FAMILIES, config_of_row
from autotune.packed import unpacked
from autotune.space import Config

OVERHEAD_S = 0.3  # per new trial: render + compile wait + verify + bookkeeping (see the module doc)
WARMUP_RUNS = 2  # untimed launches before the timed ones: the verify launch and cuda_backend.WARMUP
REPLAYED = ("ok", "wrong", "compile_error", "launch_error")  # invalid rows are re-derived, not replayed
_EXTRA = ("sm_clock_mhz", "num_regs", "static_shared")


def trial_seconds(row: dict, overhead_s: float = OVERHEAD_S) -> float:
    """Simulated GPU-host seconds of one new trial from its results row."""
    if row["status"] == "invalid":
        return 0.0
    if row.get("time_ms") is None:
        return overhead_s
    return overhead_s + (row["reps"] + WARMUP_RUNS) * row["time_ms"] / 1000.0


def _connect(db_path: str | Path) -> sqlite3.Connection:
    path = Path(db_path)
    if not path.is_file():
        raise AutotuneError(f"replay database {path} does not exist; pass --replay-db with a recorded results database")
    path = unpacked(path)  # a gzip'd dataset is replayed from its plain copy
    # Read-only: a replay never changes its dataset. A checkpointed file (no -wal beside it) is
    # opened immutable, which also keeps SQLite from leaving -shm/-wal files next to it.
    wal = path.with_name(path.name + "-wal")
    mode = "mode=ro" if wal.exists() else "immutable=1"
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?{mode}", uri=True)
    conn.row_factory = sqlite3.Row
    return conn


def load_rows(db_path: str | Path, shape: tuple[int, int, int], gpu: str | None = None) -> list[dict]:
    """The recorded rows for one shape and one GPU model (any, if the dataset holds only one;
    several boards of one model are one dataset, as they are one key for reuse). Rows of
    earlier replays are never a dataset; any other backend is (cuda; fake for synthetic data)."""
    conn = _connect(db_path)
    try:
        rows = [dict(r) for r in conn.execute(
            "SELECT * FROM results WHERE backend != 'replay' AND M = ? AND N = ? AND K = ? ORDER BY id", shape)]
        held = [] if rows else [f"{M}x{N}x{K}" for M, N, K in conn.execute(
            "SELECT DISTINCT M, N, K FROM results WHERE backend != 'replay' ORDER BY M, N, K LIMIT 9")]
    except sqlite3.DatabaseError as exc:
        hint = f"; decompress it first (gunzip -k {db_path})" if str(db_path).endswith(".gz") else ""
        raise AutotuneError(f"{db_path} is not an autotune results database: {exc}{hint}") from None
    finally:
        conn.close()
    if gpu:
        rows = [r for r in rows if gpu in (r["gpu_uuid"], r["gpu_name"])]
    models = sorted({f"{r['backend']}:{r['gpu_name']}" for r in rows})
    if not rows:
        raise AutotuneError(f"{db_path} has no recorded results for {'x'.join(map(str, shape))}"
                            + (f" on {gpu}" if gpu else "")
                            + (f"; it holds {', '.join(held[:8])}{', ...' if len(held) > 8 else ''}" if held else ""))
    if len(models) > 1:
        raise AutotuneError(f"{db_path} holds {len(models)} GPU models for this shape ({', '.join(models)}); "
                            f"choose one")
    return rows


def recorded_families(db_path: str | Path, shape: tuple[int, int, int], families: list[str]) -> list[str]:
    """The families of `families` the dataset recorded at this shape. None of them is refused: every
    trial would be `unrecorded` and the search would find nothing. A family it lacks beside others
    is left out by the caller (say, a default search over every family)."""
    have = sorted({r["family"] for r in load_rows(db_path, shape) if r["status"] in REPLAYED})
    kept = [f for f in families if f in have]
    if not kept:
        only = f"; it has {', '.join(have)} there (--family {','.join(have)})" if have else ""
        raise AutotuneError(f"the replay dataset {db_path} has no {', '.join(families)} results at "
                            f"{'x'.join(map(str, shape))}{only}: record them first or search what it has")
    return kept


def current_name(row: dict) -> str:
    """The row's kernel name under today's parameters (families.config_of_row); a row that is
    not a config of today's space keeps its recorded name, and simply matches nothing."""
    family = FAMILIES.get(row.get("family") or "")
    if family is None or all(row.get(p.name) is not None for p in family.params):
        return row["kernel"]
    try:
        return config_of_row(row).name
    except SpaceError:
        return row["kernel"]


def load_baseline(db_path: str | Path, shape: tuple[int, int, int], gpu_name: str | None) -> Timing | None:
    """cuBLAS as recorded: the median of the recorded medians (one per search and board); none
    for rows without a GPU name."""
    conn = _connect(db_path)
    try:
        rows = [dict(r) for r in conn.execute("SELECT * FROM baselines WHERE gpu_name = ? AND M = ? AND N = ? AND K = ?",
                                              (gpu_name, *shape))]
    except sqlite3.DatabaseError:
        rows = []
    finally:
        conn.close()
    if not rows:
        return None
    watts = [r["watts"] for r in rows if r.get("watts") is not None]  # none in a dataset from before the column
    return Timing(median(r["time_ms"] for r in rows), min(r["time_ms_min"] for r in rows),
                  max(r["time_ms_max"] for r in rows), len(rows), median(watts) if watts else None)


class ReplayBackend(Backend):
    """The Backend contract (backends.base) over a recorded dataset."""

    name = "replay"
    explain = False  # no compiling on replay: the point is to need neither GPU nor toolchain
    device = "replay"
    any_config = False  # a config not in the dataset has no row to replay

    def __init__(self, db_path: str | Path, shape: tuple[int, int, int], gpu: str | None = None,
                 overhead_s: float = OVERHEAD_S):
        self.db_path = str(db_path)
        M, N, K = shape
        self.shape = (M, N, K)
        self.overhead_s = overhead_s
        rows = load_rows(db_path, self.shape, gpu)
        self.recorded_backend = rows[0]["backend"]  # "cuda" for GPU data, "fake" for synthetic data
        self._prov = {k: rows[0].get(k) for k in ("gpu_name", "gpu_uuid", "arch", "driver_version", "nvrtc_version")}
        self._prov["cublas_version"] = rows[0].get("cublas_version")
        # the latest answer per config wins, as it would in store.find_key
        self.rows: dict[str, dict] = {current_name(r): r for r in rows if r["status"] in REPLAYED}
        self.baseline = load_baseline(db_path, self.shape, self._prov["gpu_name"])
        self.simulated_s = 0.0  # running total over this backend's trials
        self.measured: list[str] = []  # kernel names in the order they were asked for

    @property
    def provenance(self) -> dict:
        return dict(self._prov)

    def recorded(self, family: str | None = None) -> list[dict]:
        """The replayable rows (ok and failures), optionally of one family."""
        return [r for r in self.rows.values() if family in (None, r["family"])]

    def best(self, families: list[str] | None = None) -> dict | None:
        """The fastest ok row: the exhaustive best when the dataset covers the whole space."""
        ok = [r for r in self.rows.values() if r["status"] == OK and (families is None or r["family"] in families)]
        return min(ok, key=lambda r: r["time_ms"]) if ok else None

    def measure(self, config: Config, source: str) -> Outcome:
        self.measured.append(config.name)
        row = self.rows.get(config.name)
        outcome = self._outcome(row) if row else Outcome(UNRECORDED, reason="not in the recorded dataset")
        self.simulated_s += trial_seconds({**outcome.row(), "status": outcome.status}, self.overhead_s)
        return outcome

    @staticmethod
    def _outcome(row: dict) -> Outcome:
        timing = None
        if row["status"] == OK:
            timing = Timing(row["time_ms"], row["time_ms_min"], row["time_ms_max"], row["reps"], row.get("watts"))
        extra = {k: row[k] for k in _EXTRA if row.get(k) is not None}
        return Outcome(row["status"], reason=row.get("reason") or "", err=row.get("err"), err_ref=row.get("err_ref"),
                       timing=timing, extra=extra)
