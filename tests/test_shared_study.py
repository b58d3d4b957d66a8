"""Many workers on one study: each config is measured once across all of them, every result
lands in the one results database with the worker and device that measured it.

The journal-file study runs everywhere; the PostgreSQL one needs a server, whose URL CI
(.ci/run) exports as AUTOTUNE_TEST_PG."""
from __future__ import annotations

import collections
import os
import subprocess
import sys
import threading
from pathlib import Path

import optuna
from click.testing import CliRunner

from autotune import store
from autotune.backends.child import WorkerSpec
from autotune.backends.pool import start_workers
from autotune.cli import cli
from autotune.families import TILED
from autotune.search.loop import run_search
from autotune.space import Limits

SHAPE = (24, 20, 9)


def two_searches(path: Path, storage: str, study: str, log: Path, trials: int = 5) -> list:
    """Two independent searches (as two hosts would run them), one worker process each."""
    os.environ["AUTOTUNE_TEST_LOG"] = str(log)
    results, errors = [], []

    def one(seed: int) -> None:
        try:
            [worker] = start_workers([WorkerSpec("tests.faulty:logging_sim", SHAPE, seed=0)])
            try:
                results.append(run_search(store.open_db(path), worker, [TILED], Limits(), sampler="random",
                                          trials=trials, seed=seed, storage=storage, study=study))
            finally:
                worker.close()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(seed,)) for seed in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    return results


def check_once(path: Path, log: Path, results: list) -> list[dict]:
    measured = collections.Counter(line.split()[0] for line in log.read_text().splitlines())
    twice = [k for k, n in measured.items() if n > 1]
    assert not twice, f"measured more than once: {twice}"
    db = store.open_db(path)
    rows = [r for r in db.query("select * from results where status != 'invalid'")]
    assert sorted(r["kernel"] for r in rows) == sorted(measured)  # every measurement has its row, no more
    assert sum(r.new for r in results) == len(rows)
    assert all(r["worker"] and r["device"] == "sim" for r in rows)
    assert db.execute("pragma integrity_check").fetchone()[0] == "ok"
    return rows


def test_two_searches_share_a_journal_study(tmp_path):
    path, log, journal = tmp_path / "r.sqlite", tmp_path / "measured.log", tmp_path / "study.journal"
    results = two_searches(path, str(journal), "shared", log)
    check_once(path, log, results)
    study = optuna.load_study(study_name="shared", storage=optuna.storages.JournalStorage(
        optuna.storages.journal.JournalFileBackend(str(journal))))
    told = [t for t in study.trials if t.state.is_finished()]
    # every trial is told: those with a row, and those skipped (the other search was measuring it)
    assert len(told) == sum(r.trials + r.skipped for r in results)


def test_two_searches_share_a_postgres_study(tmp_path, pg_url):
    path, log = tmp_path / "r.sqlite", tmp_path / "measured.log"
    results = two_searches(path, pg_url, "pg", log)
    check_once(path, log, results)
    # run again: the study continues (its trials are loaded) and nothing is measured twice
    more = two_searches(path, pg_url, "pg", log, trials=2)
    check_once(path, log, results + more)
    assert len(optuna.load_study(study_name="pg", storage=pg_url).trials) >= sum(r.trials for r in results + more)


def test_two_cli_processes_on_one_postgres_study(tmp_path, pg_url):
    path = tmp_path / "r.sqlite"
    command = [sys.executable, "-m", "autotune.cli", "search", "--backend", "sim", "--M", "24", "--N", "20",
               "--K", "9", "--family", "tiled", "--sampler", "tpe", "--trials", "4", "--storage", pg_url,
               "--study", "cli", "--db", str(path)]
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).parent.parent))
    procs = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for _ in range(2)]
    outs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    db = store.open_db(path)
    rows = list(db.query("select * from results where status != 'invalid'"))
    assert len({r["kernel"] for r in rows}) == len(rows)  # none twice
    # 4 new each, on a schema of this test's own: every row was measured by one of the two
    ours = [r for r in rows if any(f":{p.pid}:" in r["worker"] for p in procs)]
    assert len(ours) == len(rows) == 8 and len({r["worker"] for r in ours}) == 2
    assert db.execute("pragma integrity_check").fetchone()[0] == "ok"


def test_workers_flag_runs_several_workers(tmp_path):
    path = tmp_path / "w.sqlite"
    result = CliRunner().invoke(cli, ["search", "--backend", "sim", "--M", "24", "--N", "20", "--K", "9",
                                      "--family", "tiled", "--trials", "6", "--workers", "2", "--db", str(path)])
    assert result.exit_code == 0, result.output
    rows = list(store.open_db(path).query("select * from results where status != 'invalid'"))
    assert len(rows) == 6 and len({r["kernel"] for r in rows}) == 6
    assert len({r["worker"] for r in rows}) == 2 and {r["device"] for r in rows} == {"sim"}
    assert "by 2 worker(s)" in result.output
