"""`python -m autotune.api.firstuse.job --M .. --N .. --K .. --layout NT --db PATH ...`: one first-use
tuning, in a process of its own (tuner.SubprocessTuner starts it; anyone may run it by hand).

It starts a measuring worker at the shape (backends.worker: kernels run in a process of their own,
whose fault takes down neither this process nor the caller's), which times cuBLAS there (the
baselines, and each row's cublas_ms), ranks the candidates (search.ranking) and measures them in that
order, each verified at the shape before it is timed and recorded as a search's trial is
(search.measure.evaluate), until `--trials` new measurements or `--seconds`. Each row is committed on
its own: a job killed midway leaves whole rows. It dies with the process that started it.

Exit status: 0 done; 2 bad input (one line on stderr); 3 the machine is at fault (no device, no
compiler: tuner.ENVIRONMENT_EXIT); 1 anything else, a kernel's fault included (its row is recorded).
"""
from __future__ import annotations

import argparse
import os
import sys
import threading
import time

from autotune import store
from autotune.api.commands import start_measuring
from autotune.api.firstuse.tuner import ENVIRONMENT_EXIT, Budget, check_budget
from autotune.backends.child import WorkerSpec
from autotune.errors import AutotuneError, EnvironmentFault
from autotune.families import FAMILIES, families_for
from autotune.families.layouts import layout_choices, layout_name, narrow_to
from autotune.search.measure import evaluate
from autotune.search.ranking import candidates, make_ranker
from autotune.space import Shape, check_shape


def run(shape: Shape, layout: str, db_path: str, kind: str = "cuda", device: int = 0, precision: str = "fp32",
        trials: int = 4, seconds: float = 120.0) -> int:
    """Measure the ranked candidates at the shape (the module's docstring); returns how many were new."""
    deadline = time.monotonic() + seconds
    check_shape(*shape)
    families = narrow_to([FAMILIES[f] for f in families_for(precision)], layout_choices(layout))
    [worker], db = start_measuring([WorkerSpec(kind, shape, 0, device)], db_path)
    new = 0
    try:
        gpu = worker.provenance["gpu_name"]
        measured = {r["kernel"] for r in store.results(db, shape, worker.name, gpu) if layout_name(r) == layout}
        pool = candidates(db, worker, families, worker.limits, measured)
        for config in make_ranker(db, worker, worker.limits).rank(pool, shape):
            if new >= trials or time.monotonic() > deadline:
                break
            done = evaluate(db, worker, config, worker.limits, worker.peak_tflops)
            new += done is not None and not done.cached
    finally:
        worker.close()
        db.close()
    return new


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m autotune.api.firstuse.job", description=__doc__.split("\n\n")[0])
    for name in ("--M", "--N", "--K"):
        p.add_argument(name, type=int, required=True)
    p.add_argument("--layout", default="NN")
    p.add_argument("--db", required=True)
    p.add_argument("--backend", default="cuda", choices=["cuda", "sim"])
    p.add_argument("--device", type=int, default=0)
    p.add_argument("--precision", default="fp32")
    p.add_argument("--trials", type=int, default=4)
    p.add_argument("--seconds", type=float, default=120.0)
    return p.parse_args(argv)


def die_with_parent() -> None:
    """End this job when the process that started it is gone (even killed by SIGKILL, when its atexit
    never ran); the worker this job starts watches this job the same way."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


def main(argv: list[str]) -> int:
    die_with_parent()
    a = parse(argv)
    try:
        check_budget(Budget(a.trials, a.seconds), "--trials {}: ", "--seconds {}: ")
        if a.device < 0:
            raise AutotuneError(f"--device {a.device}: a CUDA device's index, at least 0")
        new = run((a.M, a.N, a.K), a.layout, a.db, a.backend, a.device, a.precision, a.trials, a.seconds)
    except EnvironmentFault as exc:
        print(f"autotune: {exc}", file=sys.stderr)
        return ENVIRONMENT_EXIT
    except AutotuneError as exc:
        print(f"autotune: {exc}", file=sys.stderr)
        return 2
    print(f"autotune: {new} new measurement(s) at {a.M}x{a.N}x{a.K} {a.layout}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
