"""load()'s side of first-use tuning: its options checked, the database made, the tuner attached."""
from __future__ import annotations

from autotune.api.firstuse.background import Background
from autotune.api.firstuse.tuner import Budget, SubprocessTuner, check_budget, writable_db
from autotune.api.matmul import Matmul
from autotune.errors import AutotuneError

MODES = ("off", "background")
BACKENDS = ("cuda", "sim")  # those a job can measure on (replay answers from a dataset: nothing to tune)


def tuning_db(tune: str, db_path: str, budget: Budget, *, backend: str, gpu: str | None, library: bool,
              defaults_only: bool) -> str | None:
    """The database first-use tuning writes (created now, so the loader reads it from its first call);
    None with tune="off". Options that cannot go with it are one line each."""
    if tune not in MODES:
        raise AutotuneError(f"load(tune={tune!r}): one of {', '.join(map(repr, MODES))}")
    if tune == "off":
        return None
    if defaults_only or not library:
        raise AutotuneError("load(tune='background') tunes where cuBLAS runs now: drop defaults_only and "
                            "library=False")
    if gpu is not None:
        raise AutotuneError(f"load(tune='background') records rows of the device each call runs on; gpu={gpu!r} "
                            f"reads another model's: drop gpu=")
    if backend not in BACKENDS:
        raise AutotuneError(f"load(tune='background') measures on backend cuda or sim, not {backend!r}")
    check_budget(budget, "load(tune_trials={}): ", "load(tune_seconds={}): ")
    return writable_db(db_path)


def attach(matmul: Matmul, db_path: str, backend: str, precision: str, budget: Budget) -> Background:
    """Tune, in the background, the call kinds the matmul runs on cuBLAS (background.py)."""
    return Background(matmul, SubprocessTuner(db_path, backend, precision, budget))
