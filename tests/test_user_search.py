"""`autotune search` as a user runs it: several hosts on one study, a broken environment,
an empty search, what the Optuna study tells optuna-dashboard, and bad combinations of flags.

The package is being split into subpackages, so these tests drive the tool only through its
command line (`autotune.cli.cli` in process, or `python -m autotune.cli` where a real process
is needed: environment variables, two hosts at once) and read the results with plain sqlite3
and Optuna's public API. Nothing here imports any other `autotune.*` module.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import optuna
import pytest
from click.testing import CliRunner

from autotune.cli import cli
from autotune.packed import unpacked

ROOT = Path(__file__).resolve().parent.parent
DATASET = ROOT / "benchmarks" / "data" / "h200-gt-naive-tiled-4096.sqlite.gz"  # every valid naive/tiled config, 4096^3
SIM = ["--backend", "sim", "--M", "24", "--N", "20", "--K", "9"]  # tiny: the emulator answers in a fraction of a second
FAILED = ("compile_error", "launch_error", "timeout")


# ---------------------------------------------------------------------------------------------
# helpers


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args))


def lines_of(text: str) -> list[str]:
    """Non-blank lines; a progress bar's carriage returns split lines too (splitlines does)."""
    return [line for line in (text or "").splitlines() if line.strip()]


def cli_process(args: list[str], env: dict[str, str] | None = None) -> subprocess.Popen:
    """A real `autotune` process importing this checkout's package (as tests/test_resume.py does)."""
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    return subprocess.Popen([sys.executable, "-m", "autotune.cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": path, **(env or {})})


def rows(db: Path, where: str = "1") -> list[dict]:
    """Result rows of a --db file, as dicts; none when the search never created the file."""
    if not db.exists():
        return []
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in conn.execute(f"select * from results where {where}")]
    except sqlite3.OperationalError:  # created but no results table yet
        return []
    finally:
        conn.close()


@pytest.fixture
def dataset(tmp_path) -> Path:
    """A copy of the recorded dataset: a replay must never touch the committed file."""
    copy = tmp_path / "gt.sqlite"
    shutil.copyfile(unpacked(DATASET), copy)
    return copy


# ---------------------------------------------------------------------------------------------
# 1. several hosts on one study: each config is measured once across them

# A narrowed naive+tiled space of 47 valid configs (naive: bx, by in 1..16, x over cols = 25;
# tiled: T=16, pad 0, x over cols = 22). Each host asks for 16 new measurements: 32 of 47 fit
# without any repeat, but two hosts that do not share claims pick their 16 independently, and
# two random 16-subsets of 47 share a config with probability 1 - C(31,16)/C(47,16) > 0.9998.
# So today's code (no ledger from the CLI) fails this reliably, and replay keeps it fast.
SHARED_SPACE = ["--family", "naive,tiled", "-p", "T=16", "-p", "pad=0", "-p", "x_over=cols",
                "-p", "bx=1,2,4,8,16", "-p", "by=1,2,4,8,16"]
SHARED_TRIALS = 16


def two_hosts(tmp_path: Path, dataset: Path, storage: str, study: str) -> None:
    """Two `autotune search` processes started together, each with its own --db (two hosts),
    one --storage study; then: no kernel measured by both, and each has what it asked for."""
    dbs = [tmp_path / "host1.sqlite", tmp_path / "host2.sqlite"]
    procs = [cli_process(["search", "--backend", "replay", "--replay-db", str(dataset), "--M", "4096",
                          *SHARED_SPACE, "--sampler", "random", "--trials", str(SHARED_TRIALS),
                          "--storage", storage, "--study", study, "--db", str(db)]) for db in dbs]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs

    # "measured by" = the worker column: host:pid:wN of the search process (db/README.md); a row
    # copied from the other host's ledger entry keeps the worker that really measured it
    own = [f":{p.pid}:" for p in procs]
    measured_by: dict[str, set[str]] = {}
    for db, mine in zip(dbs, own):
        kept = rows(db, "status != 'invalid'")
        for r in kept:
            assert any(o in r["worker"] for o in own), f"{db.name}: row {r['kernel']} by unknown worker {r['worker']}"
            measured_by.setdefault(r["kernel"], set()).add(r["worker"])
        # the rows it was asked for: --trials new measurements of its own (copies come on top)
        assert sum(mine in r["worker"] for r in kept) == SHARED_TRIALS, (db.name, [r["worker"] for r in kept])
    twice = sorted(k for k, workers in measured_by.items() if len(workers) > 1)
    assert not twice, f"measured by both hosts: {twice}"


def test_two_hosts_on_one_sqlite_study_measure_each_config_once(tmp_path, dataset):
    two_hosts(tmp_path, dataset, f"sqlite:///{tmp_path / 'shared.db'}", "s")


def test_two_hosts_on_one_postgres_study_measure_each_config_once(tmp_path, dataset, pg_url):
    two_hosts(tmp_path, dataset, pg_url, "s")


# ---------------------------------------------------------------------------------------------
# 2. a broken environment stops the search and is never stored as a kernel's fault

ENV_SEARCH = [*SIM, "--family", "tiled", "--sampler", "random", "--trials", "2"]


@pytest.mark.parametrize("fault", ["cache-is-a-file", "no-host-compiler", "kernel-timeout-too-short"])
def test_broken_environment_stops_with_one_line_and_stores_nothing(tmp_path, fault):
    db = tmp_path / "r.sqlite"
    args, env = [*ENV_SEARCH, "--db", str(db)], {}
    if fault == "cache-is-a-file":
        cache = tmp_path / "cachefile"
        cache.write_text("not a directory\n")
        env["AUTOTUNE_CACHE"] = str(cache)
        names = [str(cache), "AUTOTUNE_CACHE"]
    elif fault == "no-host-compiler":
        # an empty cache of its own, so the emulator must run the compiler for every kernel
        env.update(CXX="/nonexistent/g++", AUTOTUNE_CACHE=str(tmp_path / "fresh-cache"))
        names = ["/nonexistent/g++", "CXX"]
    else:
        args += ["--kernel-timeout", "0.001"]  # no emulated kernel finishes in a millisecond
        names = ["--kernel-timeout", "0.001"]
    proc = cli_process(["search", *args], env)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 2, (proc.returncode, out, err)
    said = lines_of(err)
    assert len(said) == 1 and any(n in said[0] for n in names), err
    stored = rows(db, f"status in {FAILED}")
    assert not stored, [(r["kernel"], r["status"], r["reason"]) for r in stored]


# Two configs: naive (x over cols, 8x8 threads) and tiled (T=8, 8x8 threads, no padding).
REMEASURE = [*SIM, "--family", "naive,tiled", "-p", "x_over=cols", "-p", "bx=8", "-p", "by=8", "-p", "T=8",
             "-p", "pad=0", "--sampler", "random", "--seed", "1"]


def test_remeasure_failed_measures_a_failed_row_again(tmp_path):
    db = tmp_path / "r.sqlite"
    first = invoke("search", *REMEASURE, "--trials", "2", "--db", str(db))
    assert first.exit_code == 0, first.output
    [naive] = rows(db, "family = 'naive' and status = 'ok'")
    # plant an old failure, as a broken run (or a real fault) would have left it; the old date
    # tells a measurement made now apart from it, even when it is written over the same row
    naive["created_at"] = "2000-01-01T00:00:00+00:00"
    with sqlite3.connect(db) as conn:
        conn.execute("update results set status = 'launch_error', reason = 'planted by the test', created_at = ? "
                     "where id = ?", (naive["created_at"], naive["id"]))
    conn.close()

    # the same command without --remeasure reuses the failure: nothing is measured again
    again = invoke("search", *REMEASURE, "--trials", "1", "--db", str(db))
    kept = rows(db, f"kernel = '{naive['kernel']}'")
    assert [(r["id"], r["status"]) for r in kept] == [(naive["id"], "launch_error")], (again.output, kept)

    # --remeasure failed measures it anew; the old row may stay, a new ok one must be there
    redo = invoke("search", *REMEASURE, "--trials", "1", "--remeasure", "failed", "--db", str(db))
    assert redo.exit_code == 0, redo.output
    ok = rows(db, f"kernel = '{naive['kernel']}' and status = 'ok'")
    assert ok and any(r["id"] != naive["id"] or r["created_at"] != naive["created_at"] for r in ok), ok
    best = invoke("best", *SIM[2:], "--backend", "sim", "--family", "naive", "--json", "--db", str(db))
    assert best.exit_code == 0, best.output
    assert json.loads(best.stdout)["kernel"] == naive["kernel"]


def test_remeasure_stale_measures_a_row_of_an_older_source_again_first(tmp_path):
    """After a template changed, a recorded row measured another kernel under today's name. A search
    takes a config with a row at its shape for measured when it picks its starts; with --remeasure
    stale it measures today's source of such a row first, and keeps the old row beside the new one."""
    db = tmp_path / "r.sqlite"
    assert invoke("search", *REMEASURE, "--trials", "2", "--db", str(db)).exit_code == 0
    [naive] = rows(db, "family = 'naive' and status = 'ok'")
    today = naive["source_hash"]
    with sqlite3.connect(db) as conn:  # as if the row had been measured before a template changed
        conn.execute("update results set source_hash = ? where id = ?", ("0" * 64, naive["id"]))
    conn.close()

    redo = invoke("search", *REMEASURE, "--trials", "1", "--remeasure", "stale", "--db", str(db))
    assert redo.exit_code == 0, redo.output
    assert "starting from 1 config recorded at 24x20x9" in redo.output, redo.output
    kept = rows(db, f"kernel = '{naive['kernel']}'")
    assert sorted(r["source_hash"] for r in kept) == sorted(["0" * 64, today]), kept
    newest = max(rows(db, "status = 'ok'"), key=lambda r: r["id"])
    assert (newest["kernel"], newest["source_hash"]) == (naive["kernel"], today)  # the one new trial: today's source


# ---------------------------------------------------------------------------------------------
# 6. an empty search says so and fails


def test_search_of_a_space_without_a_valid_config_is_an_error(tmp_path):
    # T=16 with 32 threads in x: bx must divide T, so not one config of this space is valid
    db = tmp_path / "r.sqlite"
    result = invoke("search", *SIM, "--family", "tiled", "-p", "T=16", "-p", "bx=32", "--trials", "3",
                    "--db", str(db))
    assert result.exit_code == 2, result.output
    assert len(lines_of(result.output)) == 1, result.output


def test_replay_of_a_family_the_dataset_never_recorded_is_an_error(tmp_path, dataset):
    # the dataset holds naive and tiled only: every blocked trial would be 'unrecorded'
    result = invoke("search", "--backend", "replay", "--replay-db", str(dataset), "--M", "4096",
                    "--family", "blocked", "--trials", "3", "--db", str(tmp_path / "r.sqlite"))
    assert result.exit_code != 0, result.output
    said = lines_of(result.output)
    assert len(said) == 1 and "blocked" in said[0], result.output


def test_replay_over_several_families_searches_those_the_dataset_has(tmp_path, dataset):
    # the default search names every family; the naive/tiled dataset answers for two of them
    result = invoke("search", "--backend", "replay", "--replay-db", str(dataset), "--M", "4096",
                    "--family", "naive,tiled,blocked", "--trials", "3", "--db", str(tmp_path / "r.sqlite"))
    assert result.exit_code == 0, result.output
    assert "no blocked results at this shape; searching naive, tiled" in result.output
    families = {r[0] for r in sqlite3.connect(tmp_path / "r.sqlite").execute("select family from results")}
    assert families <= {"naive", "tiled"} and families


# ---------------------------------------------------------------------------------------------
# 7. the Optuna study tells the truth (what optuna-dashboard shows)

# T=8 with by=8: bx 2, 4, 8 are valid; bx 16, 32 and by 16, 32 are refused (they do not divide T)
STUDY_SPACE = [*SIM, "--family", "tiled", "-p", "T=8", "-p", "bx=2,4,8,16,32", "-p", "by=8,16,32",
               "-p", "x_over=cols", "-p", "pad=0", "--sampler", "random", "--seed", "0"]


def plain(params: dict) -> dict:
    """Parameter names without a family prefix (only to find a trial; the prefix is checked apart)."""
    return {k.rpartition(".")[2]: v for k, v in params.items()}


def test_study_has_failed_trials_for_failures_and_plain_parameter_names(tmp_path):
    db, journal = tmp_path / "r.sqlite", tmp_path / "study.journal"
    first = invoke("search", *STUDY_SPACE, "--trials", "2", "--db", str(db))
    assert first.exit_code == 0, first.output
    # a kernel fault needs a broken kernel, which the command line cannot make: plant a 'wrong' row
    # (the study learns it from the database, as it learns every earlier result)
    wrong = rows(db, "status = 'ok'")[0]
    with sqlite3.connect(db) as conn:
        conn.execute("update results set status = 'wrong', reason = 'planted: error 1e-1 > 1e-4' where id = ?",
                     (wrong["id"],))
    conn.close()
    second = invoke("search", *STUDY_SPACE, "--trials", "1", "--storage", str(journal), "--study", "s",
                    "--db", str(db))
    assert second.exit_code == 0, second.output

    study = optuna.load_study(study_name="s", storage=optuna.storages.JournalStorage(
        optuna.storages.journal.JournalFileBackend(str(journal))))
    trials = study.trials
    TS = optuna.trial.TrialState
    summary = [(t.number, t.state.name, t.value, t.params, t.user_attrs) for t in trials]
    assert trials and all(t.state in (TS.COMPLETE, TS.FAIL, TS.PRUNED) for t in trials), summary
    for t in trials:
        if t.state == TS.COMPLETE:  # a measured kernel: its rate, and where it came from
            assert t.value and t.value > 0, summary
            assert t.user_attrs.get("tflops") and t.user_attrs.get("time_ms"), summary
            assert "pct_cublas" in t.user_attrs, summary  # None on the emulator: no cuBLAS
        else:  # refused or failed: no value, and why
            assert t.user_attrs.get("status") and t.user_attrs.get("reason"), summary
    states = {(t.state, t.user_attrs.get("status")) for t in trials}
    assert any(s == TS.COMPLETE for s, _ in states), summary
    assert any(s in (TS.FAIL, TS.PRUNED) and status == "invalid" for s, status in states), summary
    planted = {"family": "tiled", "T": wrong["T"], "bx": wrong["bx"], "by": wrong["by"]}
    found = [t for t in trials if planted.items() <= plain(t.params).items()]
    assert found and all(t.state == TS.FAIL and t.user_attrs.get("status") == "wrong" for t in found), summary
    for t in trials:
        assert "family" in t.params and not any("." in name for name in t.params), t.params


# ---------------------------------------------------------------------------------------------
# 9. flags that contradict each other are bad input: one line, exit 2


def test_a_parameter_given_twice_is_an_error(tmp_path):
    result = invoke("search", *SIM, "--family", "tiled", "-p", "T=16", "-p", "T=32", "--trials", "1",
                    "--db", str(tmp_path / "r.sqlite"))
    assert result.exit_code == 2, result.output
    said = lines_of(result.output)
    assert len(said) == 1 and said[0].startswith("error: ") and re.search(r"\bT\b", said[0]), result.output


@pytest.mark.parametrize("backend", ["sim", "cuda"])
def test_replay_db_without_the_replay_backend_is_an_error(tmp_path, dataset, backend):
    # on a host without a GPU, cuda fails today for another reason (no device): the line must
    # name --replay-db, which is what is wrong with this command
    result = invoke("search", "--backend", backend, "--M", "24", "--N", "20", "--K", "9", "--family", "tiled",
                    "--replay-db", str(dataset), "--trials", "1", "--db", str(tmp_path / "r.sqlite"))
    assert result.exit_code == 2, result.output
    said = lines_of(result.output)
    assert len(said) == 1 and said[0].startswith("error: ") and "--replay-db" in said[0], result.output
