"""A real `autotune search --backend sim` killed with SIGKILL mid-run resumes when run again;
one stopped with SIGINT finishes the trial in flight, prints its summary and exits 130."""
from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

SHAPE = ["--M", "24", "--N", "20", "--K", "9"]


def search(db: Path, cache: Path, *extra: str) -> subprocess.Popen:
    command = [sys.executable, "-m", "autotune.cli", "search", "--backend", "sim", *SHAPE, "--family", "tiled",
               "--sampler", "random", "--seed", "5", "--db", str(db), *extra]
    env = dict(os.environ, AUTOTUNE_CACHE=str(cache), PYTHONPATH=str(Path(__file__).parent.parent))
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def measured(db: Path) -> int:
    if not db.exists():
        return 0
    with sqlite3.connect(db, timeout=30) as conn:
        try:
            return conn.execute("select count(*) from results where status != 'invalid'").fetchone()[0]
        except sqlite3.OperationalError:
            return 0  # not created yet


def wait_for(db: Path, rows: int, proc: subprocess.Popen, limit: float = 120.0) -> None:
    deadline = time.monotonic() + limit
    while measured(db) < rows:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, f"fewer than {rows} rows after {limit} s"
        time.sleep(0.1)


def sim_builds(cache: Path) -> int:
    """Kernels the emulator built: each measurement builds its kernel once (cache by source)."""
    return len(list((cache / "sim").glob("*.sim")))


def processes_using(path: Path) -> list[int]:
    """Processes whose environment names `path` (the search and every worker it started)."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if str(path).encode() in (proc / "environ").read_bytes():
                found.append(int(proc.name))
        except OSError:
            pass
    return found


def check_database(db: Path) -> list[dict]:
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    assert conn.execute("pragma integrity_check").fetchone()[0] == "ok"
    duplicates = conn.execute("select kernel, source_hash, M, N, K, backend, count(*) copies from results "
                              "group by kernel, source_hash, M, N, K, backend having copies > 1").fetchall()
    assert not duplicates, [dict(d) for d in duplicates]
    orphans = conn.execute("select count(*) from trials where result_id not in (select id from results)").fetchone()
    assert orphans[0] == 0
    return [dict(r) for r in conn.execute("select * from results order by id")]


def test_sigkill_then_resume(tmp_path):
    db = tmp_path / "kill.sqlite"
    first = search(db, tmp_path / "run1", "--trials", "30")
    wait_for(db, 3, first)
    first.send_signal(signal.SIGKILL)
    first.wait(30)
    deadline = time.monotonic() + 10
    while processes_using(tmp_path / "run1") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not processes_using(tmp_path / "run1")  # its worker noticed and took its kernel run with it
    before = check_database(db)
    ok_before = {r["kernel"] for r in before if r["status"] != "invalid"}
    assert 3 <= len(ok_before) < 30

    second = search(db, tmp_path / "run2", "--trials", "6")  # a cold build cache: it counts measurements
    out, err = second.communicate(timeout=600)
    assert second.returncode == 0, err
    after = check_database(db)
    new = [r for r in after if r["id"] > max(r["id"] for r in before) and r["status"] != "invalid"]
    assert len(new) == 6 and not {r["kernel"] for r in new} & ok_before
    # nothing the first run recorded was measured again (the one more build is the canary, the
    # known-good kernel every emulator builds and runs as it starts: backends/canary.py)
    assert sim_builds(tmp_path / "run2") == 6 + 1
    assert [r for r in after if r["id"] <= before[-1]["id"]] == before  # and nothing recorded was lost
    assert "6 new measurements" in out


def test_sigint_finishes_the_trial_and_prints_the_summary(tmp_path):
    db = tmp_path / "int.sqlite"
    proc = search(db, tmp_path / "run", "--trials", "40")
    wait_for(db, 2, proc)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "(interrupted)" in out and "top configs" in out
    assert "Traceback" not in err and "stopping after the trials in flight" in err
    rows = check_database(db)
    measured_rows = [r for r in rows if r["status"] != "invalid"]
    assert all(r["status"] == "ok" for r in measured_rows)  # the trial in flight finished; none was cut short
    conn = sqlite3.connect(db)
    assert conn.execute("select count(*) from claims").fetchone()[0] == 0
    assert conn.execute("select count(*) from trials").fetchone()[0] == len(rows)
