"""What tunes one shape (the Tuner seam) and the default one: a process of its own (job.py)."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from autotune import store
from autotune.api.checks import problem
from autotune.errors import AutotuneError
from autotune.space import Shape, shape_text

KILL_GRACE_S = 30.0  # past its budget, a job gets this long to finish the measurement in flight
ENVIRONMENT_EXIT = 3  # the job's status when the machine is at fault (errors.EnvironmentFault)
STOP_S = 5.0  # a job asked to stop (process exit) gets this long before it is killed


@dataclass(frozen=True)
class Job:
    """One shape to tune on one device (of GPU model `gpu`), in one operand layout (NN, NT, TN, TT: the
    plain signature, one batch; a BLAS=1 call takes that kernel's tiling, api.dispatch)."""

    device: int
    gpu: str
    shape: Shape
    layout: str

    def describe(self) -> str:
        return f"{shape_text(self.shape)} {self.layout} on device {self.device} ({self.gpu})"


@dataclass(frozen=True)
class Budget:
    """Per shape: at most `trials` new measurements, none started after `seconds`."""

    trials: int = 4
    seconds: float = 120.0


def check_budget(budget: Budget, trials_text: str, seconds_text: str) -> None:
    """A first-use job's budget (load()'s tune_trials and tune_seconds, the job's --trials and --seconds): the rules
    of a search's trials and timeout (api.checks)."""
    for why, text, value in ((problem("trials", budget.trials), trials_text, budget.trials),
                             (problem("timeout", budget.seconds), seconds_text, budget.seconds)):
        if why:
            raise AutotuneError(text.format(repr(value)) + why)


class TuneFailed(Exception):
    """A job that ended without doing its work; the message is one line, for the log. environment: the
    machine is at fault (no device, no compiler), so every other shape would fail alike."""

    def __init__(self, line: str, environment: bool = False):
        super().__init__(line)
        self.environment = environment


class Tuner(Protocol):
    def tune(self, job: Job) -> None:
        """Measure candidates at the job's shape and record their rows (and cuBLAS's time) in the
        database the loader reads; return when they are committed. Called from one background thread,
        one job at a time. Raise (TuneFailed or anything else) when it failed: the shape stays on
        cuBLAS, the failure is logged; rows it did commit still count."""

    def stop(self) -> None:
        """End a tune in flight now (process exit), leaving only committed rows; may be called from
        another thread, and when nothing is in flight."""


class SubprocessTuner:
    """Runs `python -m autotune.api.firstuse.job` per shape: CUDA is touched only there and in its worker
    process, never in the caller's process. A job past its budget by KILL_GRACE_S is killed: SQLite
    commits each row in its own transaction, so a killed job leaves the rows it finished, whole."""

    def __init__(self, db_path: str, backend: str, precision: str, budget: Budget):
        self.db_path, self.backend, self.precision, self.budget = db_path, backend, precision, budget
        self._process: subprocess.Popen | None = None
        self._lock = threading.Lock()
        self._stopped = False

    def tune(self, job: Job) -> None:
        if self._tuned_before(job):
            return  # another process (or an earlier run) measured here: its rows decide
        command = [sys.executable, "-m", "autotune.api.firstuse.job", *job_args(job, self.db_path, self.backend,
                                                                             self.precision, self.budget)]
        with self._lock:
            if self._stopped:
                return
            # a session of its own: the terminal's Ctrl-C reaches the caller, whose exit stops the job
            self._process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                             stderr=subprocess.PIPE, text=True, start_new_session=True,
                                             env=with_this_package())
        process = self._process
        try:
            _, err = process.communicate(timeout=self.budget.seconds + KILL_GRACE_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            raise TuneFailed(f"still running {self.budget.seconds + KILL_GRACE_S:.0f} s after it started: killed")
        finally:
            with self._lock:
                self._process = None
        if process.returncode != 0:
            lines = [line for line in err.splitlines() if line.strip()]
            raise TuneFailed(lines[-1] if lines else f"the job exited with status {process.returncode}",
                             environment=process.returncode == ENVIRONMENT_EXIT)

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            process = self._process
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(STOP_S)
        except subprocess.TimeoutExpired:
            process.kill()

    def _tuned_before(self, job: Job) -> bool:
        """Whether the database holds a row of this backend and GPU model at the shape in the job's layout."""
        if not Path(self.db_path).is_file():
            return False
        from autotune.families.layouts import layout_name

        db = store.open_readonly(self.db_path)
        try:
            return any(layout_name(r) == job.layout for r in store.results(db, job.shape, self.backend, job.gpu))
        finally:
            db.close()


def with_this_package() -> dict[str, str]:
    """The environment, with this very package first on the job's path (the caller may have found it
    through a path of its own: a script's folder, sys.path edits)."""
    root = str(Path(__file__).resolve().parents[2])
    rest = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": root + (os.pathsep + rest if rest else "")}


def job_args(job: Job, db_path: str, backend: str, precision: str, budget: Budget) -> list[str]:
    M, N, K = job.shape
    return ["--M", str(M), "--N", str(N), "--K", str(K), "--layout", job.layout, "--db", db_path,
            "--backend", backend, "--device", str(job.device), "--precision", precision,
            "--trials", str(budget.trials), "--seconds", str(budget.seconds)]


def writable_db(path: str) -> str:
    """The database a first-use tuning writes: refused where it is one the package ships; created
    (empty, with its tables) where it does not exist yet, so the loader can read it from the start; one the
    package ships is refused (store.check_writable)."""
    store.open_db(path).close()
    return path
