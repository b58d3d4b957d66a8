"""What a new user hit on a first afternoon with the tool (the project's issue 42): each case is
bad input answered in one line with exit status 2 (AutotuneError from the Python API), nothing
stored and no file touched that the tool did not create; or a command that must simply work."""
from __future__ import annotations

import math
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import autotune
from autotune.backends.verify import sample_configs, verify_configs
from autotune.errors import AutotuneError
from autotune.families import FAMILIES
from autotune.space import make_config, violations
from tests.test_bad_input import SIM, invoke, one_line_error
from tests.test_suite import shapes_file
from tests.test_user_search import lines_of, rows

ROOT = Path(__file__).resolve().parent.parent
TINY = [*SIM, "--family", "naive", "-p", "bx=32", "-p", "by=8", "-p", "x_over=cols", "--trials", "1"]


def search(tmp_path: Path, *args: str):
    return invoke("search", *TINY, "--db", str(tmp_path / "r.sqlite"), *args)


def nothing_stored(tmp_path: Path) -> None:
    assert not rows(tmp_path / "r.sqlite"), "a refused search stored rows"


# --------------------------------------------------------------------------- 1. --storage

def other_sqlite(path: Path) -> Path:
    conn = sqlite3.connect(path)
    conn.execute("create table notes (text)")
    conn.execute("insert into notes values ('mine')")
    conn.commit()
    conn.close()
    return path


@pytest.mark.parametrize("case", ["text-path", "sqlite-path", "sqlite-url"])
def test_a_storage_file_the_tool_cannot_recognise_is_left_byte_identical(case, tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("a text file, 24 bytes..\n")
    sqlite = other_sqlite(tmp_path / "other.db")
    target = text if case == "text-path" else sqlite
    before = target.read_bytes()
    given = f"sqlite:///{sqlite}" if case == "sqlite-url" else str(target)
    one_line_error(search(tmp_path, "--storage", given), "--storage")
    assert target.read_bytes() == before
    nothing_stored(tmp_path)


def test_storages_the_tool_made_keep_working(tmp_path):
    for storage in (str(tmp_path / "journal.log"), f"sqlite:///{tmp_path / 'study.db'}"):
        for _ in range(2):  # a new one, then the same one again
            result = invoke("search", *SIM, "--family", "naive", "-p", "bx=16,32", "-p", "by=8", "-p", "x_over=cols",
                            "--trials", "1", "--storage", storage, "--study", "s", "--db", str(tmp_path / "r.sqlite"))
            assert result.exit_code == 0, result.output


@pytest.mark.parametrize("storage, words", [("", "--storage"), ("   ", "--storage"), ("::::", "--storage"),
                                             ("nosuch://x/y", "--storage"), ("{dir}", "is a folder")])
def test_a_storage_neither_url_nor_file_is_one_line_and_creates_nothing(storage, words, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    one_line_error(search(tmp_path, "--storage", storage.format(dir=tmp_path)), words)
    assert sorted(p.name for p in tmp_path.iterdir()) == []


# --------------------------------------------------------------------------- 2. verify

# at 100x37x129 its workspace (RED=1) would hold more than the one the launcher allocates
SKINNY_TOO_WIDE = {"THREADS": 512, "MR": 2, "KT": 32, "SPLITK": 64, "KW": 2, "AH": 3, "RED": 1}


def test_verify_skips_and_counts_a_config_invalid_at_a_shape(monkeypatch):
    config = make_config(FAMILIES["skinny"], SKINNY_TOO_WIDE)
    monkeypatch.setattr("autotune.backends.verify.sample_configs", lambda family, limit, seed: [config])
    result = invoke("verify", "--backend", "sim", "--family", "skinny", "--shape", "100x37x129")
    assert result.exit_code == 0, result.output
    assert "0 passed, 0 failed, 1 skipped" in result.output and "skipped" in result.output


def test_verify_configs_never_runs_a_config_at_a_shape_it_refuses():
    config = make_config(FAMILIES["skinny"], SKINNY_TOO_WIDE)

    def run(*args):
        raise AssertionError("ran a config its own rule refuses at this shape")

    [row] = verify_configs([config], [(100, 37, 129)], run)
    assert row.status == "skipped" and "workspace" in row.reason


@pytest.mark.parametrize("name", ["tf32x3", "tf32x3wg"])
def test_plain_tf32_is_outside_the_tensor_core_families_space(name):
    family = FAMILIES[name]
    assert any("TERMS=1" in reason for reason in violations(make_config(family, {"TERMS": 1})))
    assert not violations(make_config(family, {"TERMS": 3}))
    assert all(c.values["TERMS"] == 3 for c in sample_configs(family, 40))


# --------------------------------------------------------------------------- 3. seeds

@pytest.mark.parametrize("seed", ["4294967296", "-1", "1e3"])
def test_a_seed_out_of_range_is_one_line(seed, tmp_path):
    one_line_error(search(tmp_path, "--seed", seed), "--seed")
    nothing_stored(tmp_path)


@pytest.mark.parametrize("seed", [2**32, -1])
def test_a_seed_out_of_range_is_refused_by_the_api(seed, tmp_path):
    with pytest.raises(AutotuneError, match="seed"):
        autotune.tune(24, 20, 9, family="naive", backend="sim", trials=1, seed=seed, db=str(tmp_path / "r.sqlite"))
    nothing_stored(tmp_path)


# --------------------------------------------------------------------------- 4. a study name reused

def test_a_study_name_reused_with_another_space_is_one_line(tmp_path):
    journal = str(tmp_path / "journal.log")
    first = search(tmp_path, "--storage", journal, "--study", "s1", "--family", "naive,tiled")
    assert first.exit_code == 0, first.output
    before = len(rows(tmp_path / "r.sqlite"))
    second = search(tmp_path, "--storage", journal, "--study", "s1", "--family", "tiled")
    one_line_error(second, "new --study")
    assert len(rows(tmp_path / "r.sqlite")) == before


# --------------------------------------------------------------------------- 5. suite -o

@pytest.mark.parametrize("case", ["existing-file", "under-a-file", "read-only"])
def test_a_suite_into_an_unusable_folder_is_one_line_before_any_tuning(case, tmp_path):
    if case == "read-only" and os.geteuid() == 0:
        pytest.skip("root writes into a read-only folder")
    blocker = tmp_path / "file.txt"
    blocker.write_text("not a folder\n")
    out = {"existing-file": blocker, "under-a-file": blocker / "out", "read-only": tmp_path / "ro" / "out"}[case]
    (tmp_path / "ro").mkdir(mode=0o555)
    result = invoke("suite", "--shapes", str(shapes_file(tmp_path, (24, 20, 9, "tiny"))), "--backend", "sim",
                    "--family", "naive", "--trials", "1", "--db", str(tmp_path / "r.sqlite"), "-o", str(out))
    one_line_error(result, "-o")
    assert blocker.read_text() == "not a folder\n"
    nothing_stored(tmp_path)


# --------------------------------------------------------------------------- 6. the Python API's arguments

@pytest.mark.parametrize("kwargs, words", [
    ({"trials": 0}, "trials"), ({"trials": -3}, "trials"), ({"trials": 1.5}, "trials"), ({"trials": True}, "trials"),
    ({"timeout": -1}, "timeout"), ({"timeout": math.nan}, "timeout"), ({"kernel_timeout": 0}, "kernel_timeout"),
    ({"kernel_timeout": math.inf}, "kernel_timeout"), ({"sampler": "bogus"}, "sampler"), ({"batch": 0}, "batch=0 must"),
    ({"batch": -2}, "batch=-2 must"), ({"workers": 0}, "workers"), ({"compile_jobs": 0}, "compile_jobs"),
    ({"remeasure": "x"}, "remeasure"), ({"study": "s"}, "storage"), ({"backend": "bogus"}, "backend='bogus' must"),
    ({"storage": ""}, "storage"),
])
def test_the_api_refuses_bad_arguments_in_one_line_and_stores_nothing(kwargs, words, tmp_path):
    args = {"family": "naive", "backend": "sim", "trials": 1, "db": str(tmp_path / "r.sqlite"), **kwargs}
    with pytest.raises(AutotuneError, match=words) as caught:
        autotune.tune(24, 20, 9, **args)
    assert len(str(caught.value).splitlines()) == 1
    nothing_stored(tmp_path)


@pytest.mark.parametrize("option, value", [("--timeout", "nan"), ("--kernel-timeout", "nan"), ("--timeout", "inf"),
                                           ("--trials", "0")])
def test_numbers_that_are_not_numbers_are_one_line(option, value, tmp_path):
    one_line_error(search(tmp_path, option, value), option)
    nothing_stored(tmp_path)


# --------------------------------------------------------------------------- 7. an exhausted space

def test_a_search_over_an_exhausted_space_stops_and_says_so(tmp_path):
    # 8 valid configs, 50 new measurements asked for: the search measures the 8 and stops
    result = invoke("search", "--backend", "sim", "--M", "2", "--N", "2", "--K", "2", "--family", "naive",
                    "-p", "bx=1,2", "-p", "by=1,2", "--trials", "50", "--db", str(tmp_path / "r.sqlite"))
    assert result.exit_code == 0, result.output
    assert len(rows(tmp_path / "r.sqlite")) == 8
    summary = re.search(r"study \S+: (\d+) trials, (\d+) new", result.output)
    assert summary and int(summary[1]) <= 20 and int(summary[2]) == 8, result.output
    assert any("every valid config" in line for line in lines_of(result.output)), result.output


# --------------------------------------------------------------------------- minor

def test_best_on_a_folder_says_it_is_a_folder(tmp_path):
    one_line_error(invoke("best", "--M", "24", "--backend", "sim", "--db", str(tmp_path)), "is a folder")


SCRIPT = """\
import autotune
autotune.tune(24, 20, 9, family="naive", backend="sim", trials=1, db={db!r})
print("tuned")
"""


def test_the_readme_example_without_a_main_guard_says_what_to_add(tmp_path):
    script = tmp_path / "tune_it.py"
    script.write_text(SCRIPT.format(db=str(tmp_path / "r.sqlite")))
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": path})
    assert done.returncode != 0 and "tuned" not in done.stdout
    last = done.stderr.strip().splitlines()[-1]
    assert 'if __name__ == "__main__":' in last and "AutotuneError" in last, done.stderr
    assert "bootstrapping" not in done.stderr and "RuntimeError" not in done.stderr, done.stderr
    nothing_stored(tmp_path)
