"""Input a hostile user tried (a fuzzing pass over every command and the Python API, no GPU): each was a
traceback, a wrong diagnosis or a silent acceptance, and is now one line naming what was wrong and how to
fix it (exit status 2; AutotuneError from Python), or simply works."""
from __future__ import annotations

import sys

import pytest

import autotune
from autotune.api.cover import from_module
from autotune.api.dispatch import Dispatcher
from autotune.api.operands import Layout
from autotune.api.suite import read_shapes
from autotune.codegen import nvrtc
from autotune.errors import AutotuneError, EnvironmentFault, NoDeviceError
from autotune.families import FAMILIES
from autotune.families.layouts import layout_choices, narrow_to
from tests.test_bad_input import SIM, invoke, one_line_error

# --------------------------------------------------------------------------- files and the environment


def test_a_shapes_file_that_is_not_utf8_is_one_line(tmp_path):
    path = tmp_path / "bin.toml"
    path.write_bytes(b"\xff\xfe garbage")
    with pytest.raises(AutotuneError, match="is not UTF-8 text"):
        read_shapes(path)
    one_line_error(invoke("suite", "--backend", "sim", "--shapes", str(path), "--no-tune", "--db",
                          str(tmp_path / "x.sqlite")), "not UTF-8")


MODELS = '''
import torch
five = 5
def needs(x): return torch.nn.Linear(2, 2)
def raises(): raise RuntimeError("my model is broken")
def text(): return "not a model"
def good(): return torch.nn.Linear(3, 2)
'''


@pytest.mark.parametrize("attr, words", [("five", "is a int, not a function"), ("needs", "missing 1 required"),
                                         ("raises", "RuntimeError: my model is broken"),
                                         ("text", "returned a str, not a torch.nn.Module"),
                                         ("nosuch", "AttributeError")])
def test_a_module_factory_that_fails_is_one_line(attr, words, tmp_path, monkeypatch):
    pytest.importorskip("torch")
    (tmp_path / "hostile_models.py").write_text(MODELS)
    (tmp_path / "hostile_syntax.py").write_text("def model(:\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(AutotuneError, match=words) as caught:
        from_module(f"hostile_models:{attr}", [4], False)
    assert "MODULE:FACTORY" in str(caught.value)
    with pytest.raises(AutotuneError, match="SyntaxError"):
        from_module("hostile_syntax:model", [4], False)
    assert [p.shape for p in from_module("hostile_models:good", [4], False)] == [(4, 2, 3)]
    sys.modules.pop("hostile_models", None)


@pytest.mark.parametrize("value", ["abc", "-5", "0", "nan", "inf"])
def test_a_compile_limit_that_is_no_positive_number_stops_in_one_line(value, monkeypatch):
    monkeypatch.setenv("AUTOTUNE_COMPILE_LIMIT_S", value)
    with pytest.raises(EnvironmentFault, match="AUTOTUNE_COMPILE_LIMIT_S"):
        nvrtc.compile_limit_s()
    monkeypatch.setenv("AUTOTUNE_COMPILE_LIMIT_S", "2.5")
    assert nvrtc.compile_limit_s() == 2.5


def test_the_cache_root_is_absolute_whatever_the_environment_says(tmp_path, monkeypatch):
    # relative: the emulator's compiler runs g++ in a scratch folder, where a relative cache is not found
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AUTOTUNE_CACHE", "relcache")
    assert nvrtc.cache_root() == tmp_path / "relcache"
    monkeypatch.delenv("AUTOTUNE_CACHE")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for xdg in ("", "relative/cache"):  # the XDG specification: ignore an empty or relative value
        monkeypatch.setenv("XDG_CACHE_HOME", xdg)
        assert nvrtc.cache_root() == tmp_path / "home" / ".cache" / "autotune"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert nvrtc.cache_root() == tmp_path / "xdg" / "autotune"


def test_a_search_with_a_relative_cache_runs_and_writes_only_there(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AUTOTUNE_CACHE", "relcache")
    result = invoke("search", *SIM, "--family", "tiled", "--trials", "2", "--db", "r.sqlite")
    assert result.exit_code == 0, result.output
    assert {p.name for p in tmp_path.iterdir()} - {"r.sqlite", "r.sqlite-wal", "r.sqlite-shm"} == {"relcache"}


def test_verify_refuses_a_shape_too_large_for_the_emulator_at_once():
    one_line_error(invoke("verify", "--family", "tiled", "--limit", "1", "--shape", "8000x8000x8000"),
                   "too large for the emulator")


@pytest.mark.parametrize("arch", ["sm_banana", "", "90", "sm_1000", "sm_90x"])
def test_an_architecture_nvrtc_does_not_know_is_one_line(arch):
    with pytest.raises(AutotuneError, match="choose"):
        nvrtc.check_arch(arch)


def test_the_architectures_nvrtc_knows_pass():
    pytest.importorskip("cuda.bindings")
    for arch in ("sm_80", "sm_90", "sm_90a"):
        nvrtc.check_arch(arch)
    with pytest.raises(AutotuneError, match="sm_90"):  # known format, unknown to this NVRTC
        nvrtc.check_arch("sm_91")


def test_report_refuses_a_bad_arch_before_reading_anything(tmp_path):
    one_line_error(invoke("report", "--db", str(tmp_path / "none.sqlite"), "--arch", "banana",
                          "-o", str(tmp_path / "r")), "--arch 'banana'")


# --------------------------------------------------------------------------- the command line


def test_a_bare_autotune_shows_its_help():
    result = invoke()
    assert result.output.startswith("Usage: ") and "Commands:" in result.output
    assert len(result.output.splitlines()) > 5  # the help as it is written, not squashed into one error line


def test_a_transposed_layout_on_a_family_that_reads_operands_as_stored_names_the_families_that_can(tmp_path):
    db = str(tmp_path / "x.sqlite")
    one_line_error(invoke("search", *SIM, "--family", "tiled", "--layout", "NT", "--db", db), "--family blocked")
    one_line_error(invoke("measure", *SIM, "--family", "tiled", "--layout", "TT", "-p", "T=8", "--db", db),
                   "family tiled reads A and B as stored")
    with pytest.raises(AutotuneError, match="reads transposed operands"):
        narrow_to([FAMILIES["tiled"]], layout_choices("TN"))


def test_a_layout_and_a_p_that_disagree_are_refused_and_that_agree_are_taken_once(tmp_path):
    db = str(tmp_path / "x.sqlite")
    one_line_error(invoke("search", *SIM, "--family", "blocked", "--layout", "NT", "-p", "TB=0", "--db", db),
                   "--layout NT means -p TB=1, and -p TB=0 says otherwise")
    result = invoke("measure", *SIM, "--family", "blocked", "--layout", "NT", "-p", "TB=1", "--db", db)
    assert result.exit_code == 0 and "given twice" not in result.output, result.output


def test_a_family_named_twice_is_searched_once(tmp_path):
    result = invoke("search", *SIM, "--family", "tiled,,tiled", "--trials", "2", "--db", str(tmp_path / "x.sqlite"))
    assert result.exit_code == 0, result.output
    assert "tiled, tiled" not in result.output


def test_a_database_that_is_no_regular_file_is_called_so(tmp_path):
    one_line_error(invoke("best", "--M", "16", "--db", "/dev/null"), "is not a regular file")


def test_exporting_a_named_config_needs_no_database(tmp_path):
    out = tmp_path / "k.cu"
    result = invoke("export", "--M", "16", "--family", "tiled", "-p", "T=16", "-o", str(out), "--db",
                    str(tmp_path / "none.sqlite"))
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k.cu", "k.h", "k.json", "k.py"]  # no database made
    one_line_error(invoke("export", "--M", "16", "-o", str(out), "--db", str(tmp_path / "none.sqlite")),
                   "does not exist")  # the best needs one


@pytest.mark.parametrize("command", [["render"], ["export", "--M", "16", "-o", "k.cu"], ["measure", *SIM],
                                     ["sass"], ["profile", "--M", "16"]])
@pytest.mark.parametrize("result_id", ["99999999999999999999999", "9223372036854775808"])
def test_an_id_past_sqlite_s_integers_is_no_row_s(command, result_id, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    db = str(tmp_path / "a.sqlite")
    assert invoke("search", *SIM, "--family", "naive", "--trials", "1", "--db", db).exit_code == 0
    one_line_error(invoke(*command, "--id", result_id, "--db", db), f"no result with id {result_id} in the database")


@pytest.mark.parametrize("family, M", [("tailsplit", "3"), ("blocked", "8"), ("naive,tailsplit", "16"), ("splitk", "8")])
def test_the_same_search_of_a_named_study_runs_again(family, M, tmp_path):
    """A stored trial's tailsplit WAVE holds the device's waves (splitk's SPLITK its splits), and blocked's CS at N = 8
    the shape's one value: the check before the workers start compared them with the whole family's and refused the
    command's second run."""
    args = ["search", "--backend", "sim", "--M", M, "--family", family, "--trials", "2", "--storage",
            str(tmp_path / "j.log"), "--study", "s", "--db", str(tmp_path / "s.sqlite")]
    for _ in range(3):
        result = invoke(*args)
        assert result.exit_code == 0, result.output
    one_line_error(invoke(*args[:6], "tiled", *args[7:]), "study s in --storage searched another space")


@pytest.mark.parametrize("command", [["report"], ["suite", "--no-tune"]])
def test_a_missing_matplotlib_is_one_line_before_any_work(command, tmp_path, monkeypatch):
    import importlib.util

    db = str(tmp_path / "a.sqlite")
    assert invoke("search", *SIM, "--family", "naive", "--trials", "1", "--db", db).exit_code == 0
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else real(name, *a))
    out = tmp_path / "out"
    one_line_error(invoke(*command, "--db", db, "-o", str(out)), "draws its plots with matplotlib, which is not "
                                                                  "installed here: pip install matplotlib")
    assert not out.exists()


def test_a_named_study_of_families_some_device_lacks_runs_again_there(tmp_path):
    """On an sm_80 device under fp32-tc the families that need sm_90 are not searched, so the stored study's
    distributions are the others' union: the check before the workers start cannot know them and leaves them to
    run_search's."""
    from autotune import store
    from autotune.api.python import families_of, with_layout
    from autotune.backends.sim.backend import SimBackend
    from autotune.search.loop import run_search
    from autotune.search.study import check_named_study, open_storage
    from autotune.space import Limits

    ampere, families = Limits(arch="sm_80", sms=108), with_layout(families_of(None, "fp32-tc"), None)
    storage = open_storage(str(tmp_path / "s.log"))
    for _ in range(2):
        check_named_study(storage, "s", families, (64, 64, 64))
        result = run_search(store.open_db(str(tmp_path / "s.sqlite")), SimBackend(64, 64, 64, limits=ampere), families,
                            ampere, trials=2, storage=storage, study="s", timeout=60)
        assert result.trials > 0


# --------------------------------------------------------------------------- the Python API


@pytest.mark.parametrize("call, words", [
    (lambda: autotune.tune(8, backend="sim", family=5), "family=5"),
    (lambda: autotune.tune(8, backend="sim", trials=2, db=123), "db=123 is not a path"),
    (lambda: autotune.best(16, db=3.5), "db=3.5 is not a path"),
    (lambda: autotune.best(16, backend="bogus"), "unknown backend 'bogus'"),
    (lambda: autotune.best(16, family="nosuch"), "unknown family 'nosuch'"),
    (lambda: autotune.load(backend="bogus"), "unknown backend 'bogus'"),
    (lambda: autotune.load(gpu=5), "load\\(gpu=5\\)"),
])
def test_the_api_checks_its_arguments(call, words):
    with pytest.raises(autotune.AutotuneError, match=words) as caught:
        call()
    assert len(str(caught.value).splitlines()) == 1


@pytest.mark.parametrize("call, words", [
    (lambda: autotune.best(16, family=["tiled"]), "family=\\['tiled'\\]: best\\(\\) reads one family's rows"),
    (lambda: autotune.best(16, gpu=[]), "gpu=\\[\\]: pass a GPU's name or UUID as a str"),
    (lambda: autotune.report(gpu=5, output="r"), "gpu=5: pass a GPU's name or UUID as a str"),
    (lambda: autotune.report(arch=5), "arch=5: pass an architecture as a str"),
    (lambda: autotune.report(arch=None), "arch=None: pass an architecture as a str"),
    (lambda: autotune.report(M="x"), "M='x': pass a whole number, or None for any"),
    (lambda: autotune.tune(3, backend="sim", devices=5), "devices=5 must be a tuple of CUDA device indices"),
    (lambda: autotune.tune(3, backend="sim", devices=()), "devices=\\(\\) must be a tuple of CUDA device indices"),
    (lambda: autotune.tune(3, backend="sim", devices=(0, 0)), "at least one, each once"),
    (lambda: autotune.tune(3, backend="sim", devices=([0],)), "devices=\\(\\[0\\],\\) must be a tuple"),
    (lambda: autotune.tune(3, backend="replay", replay_db=5), "replay_db=5 is not a path"),
    (lambda: autotune.tune(3, backend="sim", storage=5), "storage=5: pass a journal file's path or a database URL"),
    (lambda: autotune.tune(3, backend="sim", storage="j.log", study=""), "study='': pass a study's name"),
    (lambda: autotune.tune(3, backend="sim", workers=99999), "workers=99999 must be a whole number from 1 to 256"),
    (lambda: autotune.tune(3, compile_jobs=10 ** 6), "compile_jobs=1000000 must be a whole number from 1 to 256"),
    (lambda: autotune.load(library="no"), "load\\(library='no'\\): pass True or False"),
    (lambda: autotune.load(defaults_only="no"), "load\\(defaults_only='no'\\): pass True or False"),
])
def test_the_api_checks_the_types_of_its_other_arguments(call, words, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # nothing is written: each is refused before
    with pytest.raises(autotune.AutotuneError, match=words) as caught:
        call()
    assert len(str(caught.value).splitlines()) == 1 and list(tmp_path.iterdir()) == []


def test_numpy_integers_are_the_sizes_they_hold(tmp_path):
    np = pytest.importorskip("numpy")
    db = str(tmp_path / "n.sqlite")
    result = autotune.tune(np.int64(24), np.int32(20), np.uint16(9), backend="sim", family="naive", trials=1, db=db)
    assert result.best is not None and (result.best["M"], result.best["N"], result.best["K"]) == (24, 20, 9)
    assert autotune.best(np.int64(24), 20, 9, db=db, backend="sim")["kernel"] == result.best["kernel"]
    with pytest.raises(AutotuneError, match="M=True must be a whole number"):
        autotune.best(True, db=db, backend="sim")


def test_choosing_for_a_device_that_is_no_index_is_one_line():
    from autotune.api.matmul import Matmul

    mm = Matmul(Dispatcher(None, library=False), launcher=None)
    with pytest.raises(AutotuneError, match="device='x': pass a CUDA device's index"):
        mm.choose(4, 4, 4, device="x")


@pytest.mark.parametrize("layout", ["TT", "NT", "TN"])
def test_a_batch_of_a_transposed_layout_is_searched_from_the_command_line_and_python(layout, tmp_path):
    """for_batch narrowed TA and TB to 0 first; the layout's TA=1 then read 'outside the space; allowed: 0'."""
    from autotune.families.layouts import layout_name

    db = str(tmp_path / "b.sqlite")
    result = invoke("search", *SIM, "--layout", layout, "--batch", "2", "--trials", "1", "--db", db)
    assert result.exit_code == 0, result.output
    best = autotune.tune(24, 20, 9, backend="sim", layout=layout, batch=2, trials=1, db=db, family="blocked").best
    assert layout_name(best) == layout and best["BLAS"] == 1
    assert invoke("search", *SIM, "-p", "TA=1", "--batch", "2", "--trials", "1", "--db", db).exit_code == 0


def test_the_package_root_offers_its_errors_to_catch():
    assert autotune.AutotuneError is AutotuneError and autotune.NoDeviceError is NoDeviceError
    assert "AutotuneError" in dir(autotune)


def test_load_with_no_gpu_says_so_in_its_own_words():
    from autotune.backends.cuda.device import device_count

    if device_count():
        pytest.skip("a GPU answers here")
    with pytest.raises(NoDeviceError) as caught:
        autotune.load()
    assert "load() runs its kernels on an NVIDIA GPU" in str(caught.value)
    assert "--backend" not in str(caught.value)  # the command line's advice, which a caller of load() cannot take


@pytest.mark.parametrize("shape", [("a", 4, 4), (0, 4, 4), (-3, 4, 4)])
def test_choosing_for_a_shape_out_of_range_is_one_line(shape):
    with pytest.raises(AutotuneError, match="must be"):
        Dispatcher(None, library=False).choose("NVIDIA H200", shape, Layout(False, False, False, 1))


# --------------------------------------------------------------------------- autotune.torch


@pytest.fixture
def at():
    pytest.importorskip("torch")
    import autotune.torch as module

    return module


def test_torch_mm_refuses_what_torch_would_trace_back_on(at):
    import numpy as np
    import torch

    cases = [((np.ones((2, 3)), np.ones((3, 4))), {}, "takes torch tensors"),
             ((torch.ones(2, 3), torch.ones(3, 4)), {"trans_b": "yes"}, "True or False"),
             ((torch.ones(2, 3), torch.ones(5, 4)), {}, "op\\(a\\) is 2x3 and op\\(b\\) 5x4"),
             ((torch.ones(3, 2), torch.ones(4, 5)), {"trans_a": True, "trans_b": True}, "inner sizes"),
             ((torch.ones(2, 3), torch.ones(3, 4, dtype=torch.float64)), {}, "float64")]
    for args, kwargs, words in cases:
        with pytest.raises(AutotuneError, match=words):
            at.mm(*args, **kwargs)
    with pytest.raises(AutotuneError, match="inner sizes"):  # the operator called directly, on the CPU
        torch.ops.autotune.mm(torch.ones(2, 3), torch.ones(5, 4))
    assert at.mm(torch.ones(3, 2), torch.ones(4, 3), trans_a=True, trans_b=True).shape == (2, 4)


def test_swap_linear_takes_modules_only(at):
    with pytest.raises(AutotuneError, match="takes a torch.nn.Module, not a int"):
        at.swap_linear(5)


def test_a_linear_fed_the_wrong_width_fails_as_nn_linear_does(at):
    import torch

    x = torch.ones(5, 7)
    with pytest.raises(RuntimeError) as ours:
        at.Linear(3, 4)(x)
    with pytest.raises(RuntimeError) as theirs:
        torch.nn.Linear(3, 4)(x)
    assert str(ours.value) == str(theirs.value)



def test_python_dash_m_autotune_is_the_command_line(tmp_path):
    import subprocess

    done = subprocess.run([sys.executable, "-m", "autotune", "best", "--M", "0"], capture_output=True, text=True,
                          cwd=tmp_path, timeout=120)
    assert done.returncode == 2 and done.stderr.strip() == "error: M=0 must be at least 1"
