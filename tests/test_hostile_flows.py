"""Flows a hostile user tried (a second fuzzing pass, deeper: several commands in turn, Ctrl-C, files beside the
outputs, odd operands through the matmul): each lost a file, traced back or was silently taken, and is now one
line naming what was wrong (exit status 2; AutotuneError from Python), or simply works."""
from __future__ import annotations

import json
import multiprocessing as mp
import signal
from pathlib import Path

import pytest

import autotune
from autotune import store
from autotune.api import cover as c
from autotune.api.python import families_of
from autotune.backends.spawn import sigint_ignored_by_children
from autotune.errors import AutotuneError
from autotune.families import FAMILIES
from tests.test_api import CaiArray, DeviceArray, refused
from tests.test_bad_input import SIM, invoke, one_line_error
from tests.test_suite import shapes_file

# --------------------------------------------------------------------------- files the tool did not write


def cover_args(tmp_path, *extra: str) -> list[str]:
    return ["cover", "--backend", "sim", "--M-range", "8:8", "--N", "16", "--K", "16", "--budget", "5", "--trials",
            "1", "--db", str(tmp_path / "cv.sqlite"), *extra]


def test_cover_json_never_replaces_an_input_or_a_file_it_did_not_write(tmp_path):
    one_line_error(invoke(*cover_args(tmp_path, "--json", str(tmp_path / "cv.sqlite"))), "one of the command's own")
    notes = tmp_path / "notes.txt"
    notes.write_text("mine\n")
    one_line_error(invoke(*cover_args(tmp_path, "--json", str(notes))), "is not a report of autotune cover")
    assert notes.read_text() == "mine\n"
    one_line_error(invoke(*cover_args(tmp_path, "--json", str(tmp_path / "nodir" / "r.json"))), "does not exist")
    one_line_error(invoke(*cover_args(tmp_path, "--json", str(tmp_path))), "is a folder")
    assert not (tmp_path / "cv.sqlite").exists()  # all refused before any tuning


def test_cover_json_replaces_an_earlier_report(tmp_path):
    report = tmp_path / "r.json"
    report.write_text(json.dumps({"products": []}))
    result = invoke(*cover_args(tmp_path, "--json", str(report)))
    assert result.exit_code == 0, result.output
    assert [p["M"] for p in json.loads(report.read_text())["products"]] == [8]


def test_export_leaves_a_users_files_beside_its_output_alone(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("print('my training script')\n")
    args = ["export", "--M", "16", "--family", "tiled", "-p", "T=16", "--db", str(tmp_path / "none.sqlite")]
    one_line_error(invoke(*args, "-o", str(tmp_path / "train.cu")), "autotune export did not write it")
    assert script.read_text() == "print('my training script')\n" and not (tmp_path / "train.cu").exists()
    for _ in range(2):  # an earlier export's files are replaced
        assert invoke(*args, "-o", str(tmp_path / "k.cu")).exit_code == 0


def test_export_of_a_result_id_is_that_rows_source_and_measurement(tmp_path):
    db = str(tmp_path / "s.sqlite")
    assert invoke("search", *SIM, "--family", "tiled", "--trials", "1", "--db", db).exit_code == 0
    out = tmp_path / "k.cu"
    result = invoke("export", "--M", "64", "--id", "1", "-o", str(out), "--db", db)
    assert result.exit_code == 0, result.output
    manifest = json.loads(out.with_suffix(".json").read_text())
    assert manifest["measured"]["id"] == 1 and manifest["tuned_shape"] == {"M": 24, "N": 20, "K": 9}
    assert out.read_text() == store.source(store.open_readonly(db), manifest["source_hash"])


def test_suite_outputs_that_cannot_be_written_are_one_line(tmp_path, monkeypatch):
    def refuse(*_):
        raise PermissionError(13, "Permission denied", str(tmp_path / "o" / "suite.md"))

    monkeypatch.setattr("autotune.api.suite.write_suite", refuse)
    shapes = shapes_file(tmp_path, (16, 16, 16, "g"))
    result = invoke("suite", "--backend", "sim", "--shapes", str(shapes), "--trials", "1", "--db",
                    str(tmp_path / "s.sqlite"), "-o", str(tmp_path / "o"))
    last = result.stderr.strip().splitlines()[-1]  # after the shape's progress lines
    assert result.exit_code == 2 and last.startswith("error: cannot write the suite's outputs"), result.stderr
    assert "the rows are in" in last


# --------------------------------------------------------------------------- options that went unheeded


@pytest.mark.parametrize("extra, words", [
    (["--shapes", "SHAPES", "--N", "8"], "--N goes with --M-range"),
    (["--shapes", "SHAPES", "--layout", "TT"], "--layout goes with --M-range"),
    (["--M-range", "8:16", "--N", "8", "--K", "8", "--batch", "4"], "--batch goes with --module"),
    (["--shapes", "SHAPES", "--training"], "--training goes with --module"),
    (["--shapes", "SHAPES", "--backend", "replay"], "'replay' is not one of"),
])
def test_cover_refuses_options_it_would_ignore(extra, words, tmp_path):
    shapes = str(shapes_file(tmp_path, (16, 16, 16, "g")))
    args = [shapes if x == "SHAPES" else x for x in extra]
    one_line_error(invoke("cover", *args, "--db", str(tmp_path / "cv.sqlite")), words)


def test_a_broken_environment_stops_a_suite_at_its_first_shape(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    cache.write_text("a file where the kernel cache should be")
    monkeypatch.setenv("AUTOTUNE_CACHE", str(cache))
    shapes = shapes_file(tmp_path, (16, 16, 16, "g"), (32, 16, 16, "g"))
    result = invoke("suite", "--backend", "sim", "--shapes", str(shapes), "--trials", "1", "--db",
                    str(tmp_path / "s.sqlite"), "-o", str(tmp_path / "o"))
    one_line_error(result, "AUTOTUNE_CACHE")
    assert result.stderr.count("cannot use the kernel cache") == 1  # once, not once per shape


def test_an_empty_autotune_db_means_the_default(monkeypatch):
    monkeypatch.setenv("AUTOTUNE_DB", "")
    assert store.default_path() == str(store.DEFAULT_DB)


# --------------------------------------------------------------------------- Ctrl-C


def test_an_interrupted_cover_says_so_and_exits_as_a_signal_does(tmp_path, monkeypatch):
    def interrupted(options, stop):
        stop.set()
        return []

    monkeypatch.setattr(c, "run_cover", interrupted)
    assert invoke(*cover_args(tmp_path)).exit_code == 128 + signal.SIGINT


def test_a_cover_stopped_before_a_product_reports_a_signal_not_a_spent_budget(tmp_path, capsys):
    stop = __import__("threading").Event()
    stop.set()
    products = c.from_range("8:16", 16, 16, "NN")
    c.run_cover(c.CoverOptions(products, str(tmp_path / "cv.sqlite"), [FAMILIES["tiled"]], 20, 1, kind="sim"), stop)
    assert "stopped by a signal after 0 of 2 products" in capsys.readouterr().err


def _deaf(queue) -> None:
    """Whether a Ctrl-C would reach this process's Python: SIGINT neither ignored nor blocked."""
    queue.put(signal.getsignal(signal.SIGINT) == signal.SIG_IGN
              or signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, set()))


def _spawn_deaf(ctx, queue) -> None:
    with sigint_ignored_by_children():
        child = ctx.Process(target=_deaf, args=(queue,))
        child.start()
    child.join(timeout=60)


def test_children_are_born_deaf_to_ctrl_c_from_any_thread():
    import threading

    ctx = mp.get_context("spawn")
    queue = ctx.Queue()  # multiprocessing's resource tracker runs from here on (its start unblocks the mask)
    before, mask = signal.getsignal(signal.SIGINT), signal.pthread_sigmask(signal.SIG_BLOCK, set())
    _spawn_deaf(ctx, queue)  # the main thread: SIGINT ignored
    thread = threading.Thread(target=_spawn_deaf, args=(ctx, queue))  # a worker's thread: SIGINT blocked
    thread.start()
    thread.join(timeout=120)
    assert signal.getsignal(signal.SIGINT) is before and signal.pthread_sigmask(signal.SIG_BLOCK, set()) == mask
    assert [queue.get(timeout=60), queue.get(timeout=60)] == [True, True]


# --------------------------------------------------------------------------- odd operands through the matmul


@pytest.mark.parametrize("kwargs, words", [
    ({"alpha": None}, "alpha=None"), ({"alpha": 1j}, "alpha=1j"), ({"alpha": 10 ** 400}, "finite real"),
    ({"beta": [1]}, "beta=\\[1\\]"), ({"alpha": float("nan")}, "finite"), ({"trans_a": None}, "trans_a=None"),
    ({"trans_b": "yes"}, "True or False"),
])
def test_scalars_and_flags_that_are_not_are_one_line(kwargs, words, mm):
    a, b, out = DeviceArray((8, 8), 0x100000), DeviceArray((8, 8), 0x200000), DeviceArray((8, 8), 0x300000)
    with pytest.raises(AutotuneError, match=words):
        mm(a, b, out=out, **kwargs)


def test_an_out_that_shares_memory_with_an_input_is_refused(mm, launcher):
    a, b = DeviceArray((64, 64), 0x100000), DeviceArray((64, 64), 0x200000)
    assert "out shares memory with A" in refused(mm, a, b, out=DeviceArray((64, 64), 0x100000))
    assert "out shares memory with B" in refused(mm, a, b, out=DeviceArray((64, 64), 0x200000 + 4 * 64 * 32))
    mm(a, b, out=DeviceArray((64, 64), 0x100000 + 4 * 64 * 64))  # right after A's last element: apart
    assert launcher.launches


def test_array_interface_quirks_are_refused(mm):
    a, b = CaiArray((8, 8), 0x100000), CaiArray((8, 8), 0x200000)
    assert "are not whole elements" in refused(mm, CaiArray((8, 8), 0x100000, strides=(33, 4)), b)
    readonly = CaiArray((8, 8), 0x300000)
    readonly.__cuda_array_interface__["data"] = (0x300000, True)
    assert "out is read-only" in refused(mm, a, b, out=readonly)


def test_column_blocks_of_one_matrix_share_no_element_and_are_taken(mm, launcher):
    M, K = 16, 8
    left = DeviceArray((M, K), 0x100000, strides=(2 * K, 1))  # h[:, :K] of h, M x 2K
    right = DeviceArray((M, K), 0x100000 + 4 * K, strides=(2 * K, 1))  # h[:, K:]: interleaved, disjoint
    mm(left, DeviceArray((K, K), 0x200000), out=right)
    assert launcher.launches[-1]["ptrs"][2] == 0x100000 + 4 * K
    shifted = DeviceArray((M, K), 0x100000 + 4 * (K - 1), strides=(2 * K, 1))  # one column in common
    assert "out shares memory with A" in refused(mm, left, DeviceArray((K, K), 0x200000), out=shifted)


def test_numpy_bools_are_flags(mm):
    import numpy as np

    a, b = DeviceArray((8, 8), 0x100000), DeviceArray((8, 8), 0x200000)
    mm(a, b, out=DeviceArray((8, 8), 0x300000), trans_b=np.True_)
    assert mm.choose(8, 8, 8, trans_a=np.False_) is not None


def test_export_of_a_failed_row_is_refused(tmp_path):
    db = str(tmp_path / "m.sqlite")
    invoke("measure", *SIM, "--family", "tiled", "-p", "T=64", "-p", "bx=1", "-p", "by=1", "--db", db)
    one_line_error(invoke("export", "--M", "64", "--id", "1", "-o", str(tmp_path / "k.cu"), "--db", db),
                   "result 1 is invalid")


@pytest.mark.parametrize("kwargs, words", [({"trans_a": "x"}, "trans_a='x'"), ({"batch": 0}, "batch=0"),
                                           ({"batch": -1}, "batch=-1")])
def test_choose_checks_what_it_is_asked(kwargs, words, mm):
    with pytest.raises(AutotuneError, match=words):
        mm.choose(16, 4, 8, **kwargs)


def test_a_choice_without_cublas_beside_it_says_so(tmp_path):
    from autotune.api.dispatch import Dispatcher
    from autotune.api.operands import Layout

    db = str(tmp_path / "s.sqlite")
    assert invoke("search", *SIM, "--family", "tiled", "--trials", "1", "--db", db).exit_code == 0
    gpu = store.result_by_id(store.open_readonly(db), 1)["gpu_name"]  # the emulator's rows: no cuBLAS beside them
    why = Dispatcher(db, backend="sim").choose(gpu, (24, 20, 9), Layout(False, False)).describe()
    assert "no cuBLAS time recorded beside it" in why and "nan" not in why


# --------------------------------------------------------------------------- the Python API and autotune.torch


def test_tune_takes_a_precision_and_no_empty_family():
    assert "tf32x3" in {f.name for f in families_of(None, "fp32-tc")}
    assert "tf32x3" not in {f.name for f in families_of(None)}
    with pytest.raises(AutotuneError, match="names no family"):
        families_of([])
    with pytest.raises(AutotuneError, match="unknown precision"):
        families_of("tiled", "fp64")


def test_report_output_must_be_a_path(tmp_path):
    with pytest.raises(AutotuneError, match="output=3"):
        autotune.report(db=str(tmp_path / "r.sqlite"), output=3)


def test_torch_use_and_the_operator_check_what_they_are_given(mm):
    torch = pytest.importorskip("torch")
    import autotune.torch as at

    with pytest.raises(AutotuneError, match="pass what autotune.load\\(\\) returned"):
        at.use(42)
    with pytest.raises(AutotuneError, match="not both"):
        at.use(mm, db="x.sqlite")
    with pytest.raises(AutotuneError, match="takes 2-D tensors"):
        torch.ops.autotune.mm(torch.randn(6), torch.randn(4, 6), False, True)
    with pytest.raises(RuntimeError, match="inner sizes differ"):  # the fake implementation, as tracing sees it
        torch.ops.autotune.mm(torch.empty(8, 6, device="meta"), torch.empty(4, 6, device="meta"), False, False)


def test_a_layer_held_twice_is_swapped_once_and_held_twice():
    torch = pytest.importorskip("torch")
    import autotune.torch as at

    model = torch.nn.Sequential(torch.nn.Linear(3, 3))
    model.add_module("tied", model[0])  # the same layer under a second name (weight tying)
    at.swap_linear(model)
    assert model[0] is model.tied and isinstance(model.tied, at.Linear)


# --------------------------------------------------------------------------- a third pass: the remaining commands


def test_nothing_writes_into_a_database_the_package_ships(tmp_path):
    import subprocess
    import sys

    shipped = Path(store.shipped_databases()[0]).parent / "never-written.sqlite"
    try:
        with pytest.raises(AutotuneError, match="a database the package ships, which is only read"):
            store.open_db(shipped)
        one_line_error(invoke("search", *SIM, "--trials", "1", "--db", str(shipped)), "the package ships")
        job = subprocess.run([sys.executable, "-m", "autotune.api.firstuse.job", "--M", "16", "--N", "16", "--K",
                              "16", "--db", str(shipped), "--backend", "sim", "--trials", "1"], capture_output=True,
                             text=True, timeout=120)
        assert job.returncode == 2 and "the package ships" in job.stderr
        assert not shipped.exists()
    finally:  # a regression must not leave a file in the package
        for leftover in shipped.parent.glob(f"{shipped.name}*"):
            leftover.unlink()


@pytest.mark.parametrize("args, words", [(["--trials", "0"], "--trials 0: must be"), (["--seconds", "nan"], "--seconds"),
                                         (["--seconds", "-1"], "--seconds -1.0"), (["--device", "-3"], "--device -3")])
def test_a_first_use_job_refuses_a_bad_budget(args, words, tmp_path):
    import subprocess
    import sys

    db = tmp_path / "j.sqlite"
    job = subprocess.run([sys.executable, "-m", "autotune.api.firstuse.job", "--M", "16", "--N", "16", "--K", "16",
                          "--db", str(db), "--backend", "sim", *args], capture_output=True, text=True, timeout=120)
    assert job.returncode == 2 and words in job.stderr and len(job.stderr.strip().splitlines()) == 1
    assert not db.exists()


@pytest.mark.parametrize("seconds", [10 ** 400, 1e10, True, float("inf")])
def test_load_refuses_tune_seconds_no_wait_can_take(seconds, tmp_path):
    with pytest.raises(AutotuneError, match="tune_seconds"):
        autotune.load(tune="background", backend="sim", db=str(tmp_path / "t.sqlite"), tune_seconds=seconds,
                      launcher=object())  # type: ignore[arg-type]
    assert not (tmp_path / "t.sqlite").exists()


def test_load_checks_everything_before_it_makes_a_database(tmp_path):
    with pytest.raises(AutotuneError, match="unknown precision"):
        autotune.load(tune="background", backend="sim", db=str(tmp_path / "t.sqlite"), precision="bogus")
    assert not (tmp_path / "t.sqlite").exists()


def test_a_kernel_timeout_no_wait_can_take_is_one_line(tmp_path):
    one_line_error(invoke("measure", *SIM, "--family", "tiled", "-p", "T=8", "--kernel-timeout", "1e7", "--db",
                          str(tmp_path / "m.sqlite")), "at most 1e+06")


def test_verify_json_is_strict_json():
    result = invoke("verify", "--family", "skinny", "--limit", "1", "--shape", "1x64x1", "--json")
    rows = json.loads(result.stdout, parse_constant=lambda name: pytest.fail(f"{name} is not JSON"))
    assert rows and all(r["error"] is None or isinstance(r["error"], float) for r in rows)


def test_measure_of_a_row_takes_no_layout(tmp_path):
    one_line_error(invoke("measure", *SIM, "--id", "1", "--layout", "NT", "--db", str(tmp_path / "m.sqlite")),
                   "--layout goes with --family")


def test_replay_says_what_its_dataset_holds(tmp_path):
    import gzip

    data = tmp_path / "s.sqlite"
    assert invoke("search", *SIM, "--family", "tiled", "--trials", "1", "--db", str(data)).exit_code == 0
    args = ["search", "--backend", "replay", "--M", "48", "--trials", "1", "--db", str(tmp_path / "r.sqlite")]
    one_line_error(invoke(*args, "--replay-db", str(data)), "it holds 24x20x9")
    packed = tmp_path / "s.sqlite.gz"
    packed.write_bytes(gzip.compress(data.read_bytes()))
    one_line_error(invoke(*args, "--replay-db", str(packed)), "decompress it first")


def test_best_says_which_shape_was_asked_and_where_tensor_core_rows_are(tmp_path):
    from tests.test_starts import record

    db_path = tmp_path / "b.sqlite"
    db = store.open_db(db_path)
    record(db, (32, 32, 32), "tiled", 1.0, backend="sim", gpu="Sim", T=16)
    db.close()
    result = invoke("best", "--M", "31", "--backend", "sim", "--json", "--db", str(db_path))
    assert json.loads(result.stdout)["asked_shape"] == {"M": 31, "N": 31, "K": 31}
    tc_path = tmp_path / "tc.sqlite"
    db = store.open_db(tc_path)
    record(db, (64, 64, 64), "tf32x3", 1.0, backend="sim", gpu="Sim")  # tensor-core rows only
    db.close()
    one_line_error(invoke("best", "--M", "64", "--backend", "sim", "--db", str(tc_path)), "--precision fp32-tc")


def test_profile_with_no_gpu_says_so_before_asking_for_ncu(tmp_path, monkeypatch):
    monkeypatch.setattr("autotune.backends.cuda.device.no_device_reason", lambda: "no CUDA device found")
    monkeypatch.setenv("PATH", str(tmp_path))  # no ncu either
    monkeypatch.delenv("AUTOTUNE_NCU", raising=False)
    result = invoke("profile", "--M", "64", "--family", "tiled", "-p", "T=16", "--db", str(tmp_path / "p.sqlite"))
    assert "no CUDA device" in result.stderr and "ncu" not in result.stderr.split("no CUDA device")[0]


def test_measure_exits_1_when_no_config_it_named_was_verified(tmp_path):
    db = str(tmp_path / "m.sqlite")
    result = invoke("measure", *SIM, "--family", "tiled", "-p", "T=64", "-p", "bx=1", "-p", "by=1", "--db", db)
    assert result.exit_code == 1 and ": invalid: " in result.stdout  # recorded all the same (failures are data)
    assert store.open_readonly(db).execute("SELECT status FROM results").fetchall() == [("invalid",)]
    assert invoke("measure", *SIM, "--family", "tiled", "-p", "T=8,64", "--db", db).exit_code == 0  # one of two


def test_measure_says_when_a_row_was_recorded_earlier_and_again_times_it_anew(tmp_path):
    db = str(tmp_path / "m.sqlite")
    args = ("measure", *SIM, "--family", "tiled", "-p", "T=8", "--db", db)
    first = invoke(*args)
    assert first.exit_code == 0 and "recorded earlier" not in first.output, first.output
    second = invoke(*args)
    assert second.exit_code == 0 and "(recorded earlier as id 1; --again measures it anew)" in second.output
    third = invoke(*args, "--again")
    assert third.exit_code == 0 and "recorded earlier" not in third.output, third.output
    assert [r["id"] for r in store.open_readonly(db).query("SELECT id FROM results ORDER BY id")] == [1, 2]


def test_a_ctrl_c_before_a_command_sets_its_own_handler_is_exit_status_130(monkeypatch, tmp_path):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("autotune.api.commands.measure_command", interrupted)
    result = invoke("measure", *SIM, "--family", "tiled", "-p", "T=8", "--db", str(tmp_path / "m.sqlite"))
    assert result.exit_code == 130 and result.stderr.strip() == "interrupted", result.output


def test_a_ctrl_c_while_the_command_line_loads_is_one_line_and_130(monkeypatch, capsys):
    import autotune.cli as entry

    def interrupted(name):
        raise KeyboardInterrupt

    monkeypatch.setattr(entry.importlib, "import_module", interrupted)
    with pytest.raises(SystemExit) as exit_:
        entry.main()
    assert exit_.value.code == 130 and capsys.readouterr().err.strip() == "interrupted"
