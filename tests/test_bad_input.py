"""Bad input: one line saying what was wrong and how to fix it, exit status 2, nothing written.
Property-based tests drive the space and the command line with random input."""
from __future__ import annotations

import dataclasses
import string

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autotune import store
from autotune.api.commands import Measured
from autotune.api.result import TuneResult
from autotune.backends.cuda.backend import check_memory
from autotune.cli import cli
from autotune.codegen.render import render
from autotune.errors import AutotuneError, SpaceError
from autotune.families import FAMILIES, NAIVE
from autotune.space import make_config

SIM = ["--backend", "sim", "--M", "24", "--N", "20", "--K", "9"]


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args))


def one_line_error(result, words: str) -> None:
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and words in lines[0], result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit)


@pytest.mark.parametrize("args, words", [
    (["search", "--M", "-5"], "M=-5 must be at least 1"),
    (["search", "--M", "1.5"], "'1.5' is not a valid integer"),
    (["search", "--M", "abc"], "'abc' is not a valid integer"),
    (["search", "--M", "100000"], "kernels index with int"),
    (["search", "--M", "64", "--bogus"], "No such option '--bogus'"),
    (["search"], "Missing option '--M'"),
    (["nosuchcommand"], "No such command 'nosuchcommand'"),
    (["search", "--M", "64", "--timeout", "0"], "--timeout"),
    (["search", "--M", "64", "--device", "0", "--devices", "0,1"], "either --device or --devices"),
    (["search", "--M", "64", "--devices", "0,0"], "names a device twice"),
    (["search", "--M", "64", "--devices", "zero"], "is not a list of device indices"),
    (["search", *SIM, "--devices", "0"], "do not apply to --backend sim"),
    (["search", *SIM, "--study", "x"], "--study names a study kept in --storage"),
    (["search", *SIM, "--kernel-timeout", "-1"], "--kernel-timeout"),
    (["search", *SIM, "--storage", "postgresql+psycopg://nobody@127.0.0.1:1/none"], "cannot open --storage"),
])
def test_bad_input_is_one_line(args, words, tmp_path):
    db = tmp_path / "x.sqlite"
    one_line_error(invoke(*args, "--db", str(db)) if args[0] == "search" and len(args) > 1 else invoke(*args), words)
    assert not db.exists() or not list(store.open_db(db).query("select * from results"))  # nothing written


def test_a_storage_password_is_never_printed(tmp_path):
    result = invoke("search", *SIM, "--storage", "postgresql+psycopg://me:secret@127.0.0.1:1/x",
                    "--db", str(tmp_path / "x.sqlite"))
    one_line_error(result, "cannot open --storage")
    assert "secret" not in result.output


def test_more_workers_than_gpus(monkeypatch, tmp_path):
    monkeypatch.setattr("autotune.backends.cuda.device.device_count", lambda: 2)
    one_line_error(invoke("search", "--M", "64", "--workers", "3", "--db", str(tmp_path / "x.sqlite")),
                   "--workers 3 needs 3 GPUs but 2 are in use")


@pytest.mark.parametrize("where, words", [
    ("dir", "is not a readable and writable file"),
    ("under-a-file", "is a file, not a folder"),
    ("not-sqlite", "is not an SQLite file"),
])
def test_unusable_database_paths(where, words, tmp_path):
    (tmp_path / "file").write_text("x")
    (tmp_path / "text.sqlite").write_text("not a database at all, but text")
    path = {"dir": tmp_path, "under-a-file": tmp_path / "file" / "x.sqlite", "not-sqlite": tmp_path / "text.sqlite"}
    before = (tmp_path / "text.sqlite").read_text()
    one_line_error(invoke("search", *SIM, "--db", str(path[where])), words)
    assert (tmp_path / "text.sqlite").read_text() == before  # nothing lost


def test_a_template_that_fails_to_render(monkeypatch, tmp_path):
    monkeypatch.setitem(FAMILIES, "naive", dataclasses.replace(NAIVE, template="missing.cu.j2"))
    one_line_error(invoke("render", "--family", "naive"), "template missing.cu.j2 failed to render")
    db = tmp_path / "x.sqlite"
    one_line_error(invoke("search", *SIM, "--family", "naive", "--trials", "2", "--db", str(db)), "failed to render")
    assert not list(store.open_db(db).query("select * from results where status != 'invalid'"))


def test_too_large_for_device_memory():
    check_memory(4096, 4096, 4096, 141 * 2**30, 0)  # 0.2 GiB on an H200: fine
    with pytest.raises(AutotuneError, match=r"needs 29.8 GiB .* device 1 has 16.0 GiB: use a smaller shape"):
        check_memory(40000, 40000, 40000, 16 * 2**30, 1)


# --------------------------------------------------------------------------- the space, at random

TEXT = st.text(alphabet=string.printable + "éλ\u202e", max_size=12)
VALUE = st.one_of(TEXT, st.integers(-2**70, 2**70), st.sampled_from(["32", "cols", "rows", " 8", "0x10", "1e3"]))


@st.composite
def param_dicts(draw):
    family = FAMILIES[draw(st.sampled_from(sorted(FAMILIES)))]
    names = [p.name for p in family.params]
    keys = draw(st.lists(st.one_of(st.sampled_from(names), TEXT), max_size=5, unique=True))
    return family, {k: draw(VALUE) for k in keys}


@settings(max_examples=300, deadline=None)
@given(param_dicts())
def test_random_parameters_are_refused_or_validated(case):
    family, given_params = case
    try:
        config = make_config(family, given_params)
    except SpaceError:
        return
    for p in family.params:  # whatever came in, only declared values come out
        assert config.values[p.name] in p.values and type(config.values[p.name]) is type(p.values[0])
    try:
        source = render(config)
    except SpaceError:
        return
    assert config.name in source
    for value in given_params.values():  # a string the space did not declare never reaches the source
        if isinstance(value, str) and value.strip() and not any(value.strip() == str(v) for p in family.params
                                                                for v in p.values):
            assert f"={value}" not in source


# --------------------------------------------------------------------------- the command line, at random

COMMANDS = ["search", "best", "measure", "export", "render", "space", "verify", "sass", "report", "nosuch"]
OPTIONS = ["--M", "--N", "--K", "--family", "-p", "--id", "--db", "--trials", "--timeout", "--seed", "--device",
           "--devices", "--workers", "--backend", "--storage", "--study", "--kernel-timeout", "--sampler", "-o",
           "--shape", "--limit", "--json", "--gpu", "--arch", "--preset", "--device-preset", "--full", "--help"]
TOKENS = st.one_of(st.sampled_from(OPTIONS), st.sampled_from(["0", "-1", "64", "1.5", "x", "tiled", "naive", "sim",
                                                             "cuda", "grid", "T=32", "T=7", "=", "0,1", "17x33x9",
                                                             "out.cu", "out.txt", "", "99999999999999999999"]), TEXT)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(command=st.sampled_from(COMMANDS), rest=st.lists(TOKENS, max_size=8))
def test_random_command_lines_never_trace_back(command, rest, monkeypatch, tmp_path):
    # the work behind the commands is replaced: what is tested is the parsing and checking of input
    monkeypatch.setattr("autotune.api.commands.search_command", lambda *a, **k: TuneResult(status=0, study=""))
    monkeypatch.setattr("autotune.api.commands.measure_command", lambda *a, **k: Measured("", False))
    monkeypatch.setattr("autotune.api.commands.describe_space", lambda *a, **k: "")
    monkeypatch.setattr("autotune.api.commands.verify_command", lambda *a, **k: [])
    monkeypatch.setattr("autotune.explain.counts.sass_command", lambda *a, **k: "")
    monkeypatch.setattr("autotune.explain.report.report_command", lambda *a, **k: "report")
    monkeypatch.setenv("AUTOTUNE_DB", str(tmp_path / "fuzz.sqlite"))
    monkeypatch.chdir(tmp_path)  # files the random arguments name land here
    result = CliRunner().invoke(cli, [command, *rest])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code in (0, 1, 2), result.output
    if result.exit_code == 2:
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
