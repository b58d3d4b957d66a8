"""The user-facing commands as a user meets them: `best`, `export`, `report`, `sass`, `render --id`,
`search` and `verify`, driven only through the command line.

The package is being split into subpackages, so these tests import nothing from `autotune` but
the click group `autotune.cli.cli`, and otherwise run `python -m autotune.cli` as a real process
(where a traceback, an environment variable, a missing module or a non-TTY stderr matters). They
read databases with plain `sqlite3` only.

Covered (issue numbers of the report these tests come from):
  3. commands that only read must not write: not the recorded datasets, not a read-only file, and
     a mistyped --db / $AUTOTUNE_DB must not create an empty database (nor its folders);
  4. `best` and `export` take --backend, and "nothing found" names the backend it looked at;
  5. one line and exit 2, never a traceback, for a foreign database, unwritable outputs, an
     unusable $AUTOTUNE_CACHE and a sampler whose dependency is missing;
  8. export details: kernel name of pre-BSWAP rows, --gpu, the shared-memory opt-in in the manifest;
  9. logs: no progress-bar frames into a pipe; a no-GPU hint that works at the shape asked.
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

import pytest
from click.testing import CliRunner

from autotune.cli import cli
from autotune.packed import unpacked

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "benchmarks" / "data"
# Every naive and tiled config at 4096^3 on an H200 (backend cuda); rollback-journal mode, no
# `sources` table: any write (WAL switch, schema creation, SASS counts) changes its bytes.
NAIVE_TILED = DATA / "h200-gt-naive-tiled-4096.sqlite.gz"
# Blocked rows recorded before the BSWAP parameter existed (no BSWAP column), with their sources.
PRE_BSWAP = DATA / "h200-4096-final.sqlite.gz"
SHAPE_4096 = ["--M", "4096"]
TINY = ["--M", "24", "--N", "20", "--K", "9"]  # small enough for the CPU emulator to be quick
SIM_TRIALS = 4
SHARED_OPTIN_BYTES = 48 * 1024  # above this a kernel needs cudaFuncAttributeMaxDynamicSharedMemorySize


# ----------------------------------------------------------------------------- helpers

def invoke(*args: str, env: dict | None = None):
    """In-process run (fast). catch_exceptions stays on: an unexpected exception is a failure
    that the assertions below report (exit code 1 and result.exception), not a test crash."""
    return CliRunner().invoke(cli, list(args), env=env)


def run_process(args: list[str], env_extra: dict | None = None, python_args: list[str] | None = None):
    """A real `python -m autotune.cli` process, run from the repository root (so the checkout's
    own package is imported). Output is kept as bytes: text mode would turn '\\r' into '\\n'."""
    env = {**os.environ, **(env_extra or {})}
    cmd = [sys.executable, *(python_args or ["-m", "autotune.cli", *args])]
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, timeout=300)
    return proc.returncode, proc.stdout.decode(errors="replace"), proc.stderr.decode(errors="replace")


def nonblank(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def assert_one_line_error(result) -> str:
    """The promise of the README: bad input gets one line saying what was wrong and exit 2."""
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"unhandled {type(result.exception).__name__}: {result.exception}")
    assert result.exit_code == 2, result.output
    lines = nonblank(result.output)
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    return lines[0]


def assert_process_one_line_error(rc: int, out: str, err: str) -> str:
    assert "Traceback" not in out + err, "traceback: " + " | ".join(nonblank(err)[-1:])
    assert rc == 2, (rc, out[-1000:], err[-1000:])
    lines = nonblank(out + err)
    assert len(lines) == 1 and lines[0].startswith("error: "), out + err
    return lines[0]


def copy_of(src: Path, tmp_path: Path, name: str | None = None) -> tuple[Path, bytes]:
    """A plain copy of a committed dataset (gzip'd ones unpacked) to run commands on, and its bytes."""
    plain = unpacked(src)
    dst = tmp_path / (name or plain.name)
    shutil.copyfile(plain, dst)
    return dst, dst.read_bytes()


def assert_untouched(db: Path, original: bytes) -> None:
    """Byte identity catches any write, even as root (where chmod 0o444 stops nothing), and no
    WAL/SHM/journal file may be left beside the database."""
    leftovers = [p.name for p in db.parent.iterdir() if p.name.startswith(db.name + "-")]
    assert db.read_bytes() == original, f"{db.name} was modified"
    assert leftovers == [], f"left beside the database: {leftovers}"


def query(db: Path, sql: str, args: tuple = ()) -> list[tuple]:
    """Read a database without ever writing to it (immutable: no journal, no -shm)."""
    conn = sqlite3.connect(f"file:{db}?mode=ro&immutable=1", uri=True)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


def fastest_ok(db: Path, gpu: str | None = None) -> tuple[int, str]:
    sql = "select id, kernel from results where status='ok' and backend='cuda' and M=4096 and N=4096 and K=4096"
    args: tuple = ()
    if gpu:
        sql += " and gpu_name = ?"
        args = (gpu,)
    return query(db, sql + " order by time_ms limit 1", args)[0]


def kernel_name_in_source(source: str) -> str:
    """The name after `extern "C" __global__ void [__launch_bounds__(...)]`."""
    m = re.search(r"__global__\s+void\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?(\w+)\s*\(", source)
    assert m, "no __global__ kernel in the exported source"
    return m.group(1)


# ------------------------------------------------- 3. commands that only read do not write

def read_only_commands(tmp_path: Path, best_id: int) -> dict[str, list[str]]:
    """Each command that only reads the database, with its outputs under tmp_path."""
    (tmp_path / "out").mkdir(exist_ok=True)
    return {
        "best": ["best", *SHAPE_4096],
        "best-json": ["best", *SHAPE_4096, "--json"],
        "export": ["export", *SHAPE_4096, "-o", str(tmp_path / "out" / "best.cu")],
        "export-id": ["export", *SHAPE_4096, "--id", str(best_id), "-o", str(tmp_path / "out" / "byid.cu")],
        "report": ["report", *SHAPE_4096, "-o", str(tmp_path / "report")],
        # sass --id stores SASS counts in the db's kernels table today; it must not write the db
        # it was given (its own cache elsewhere is fine)
        "sass-id": ["sass", "--id", str(best_id)],
        "render-id": ["render", "--id", str(best_id)],
    }


READ_ONLY = ["best", "best-json", "export", "export-id", "report", "sass-id", "render-id"]


@pytest.mark.parametrize("name", READ_ONLY)
def test_reading_commands_leave_a_recorded_dataset_byte_identical(name, tmp_path):
    # `autotune best` on a committed dataset switched it to WAL and added a table (git showed it
    # modified): reading commands must open the database read-only.
    db, original = copy_of(NAIVE_TILED, tmp_path)
    best_id, kernel = fastest_ok(db)
    args = read_only_commands(tmp_path, best_id)[name]
    result = invoke(*args, "--db", str(db))
    assert result.exit_code == 0, result.output
    if name in ("best", "render-id", "sass-id"):
        assert kernel in result.output
    assert_untouched(db, original)


@pytest.mark.parametrize("name", READ_ONLY)
def test_reading_commands_work_on_a_read_only_database(name, tmp_path):
    # best, export and sass failed on a read-only file ("cannot write database"). As root chmod
    # does not stop writes, so byte identity is asserted too: it catches a write either way.
    db, original = copy_of(NAIVE_TILED, tmp_path)
    best_id, kernel = fastest_ok(db)
    db.chmod(0o444)
    args = read_only_commands(tmp_path, best_id)[name]
    result = invoke(*args, "--db", str(db))
    assert result.exit_code == 0, result.output
    if name in ("best", "render-id", "sass-id"):
        assert kernel in result.output
    assert_untouched(db, original)


MISSING_DB_COMMANDS = {
    "best": ["best", *SHAPE_4096],
    "export": ["export", *SHAPE_4096],  # -o added in the test
    "report": ["report", *SHAPE_4096],  # -o added in the test
    "sass-id": ["sass", "--id", "1"],
    "render-id": ["render", "--id", "1"],
}


@pytest.mark.parametrize("via", ["--db", "AUTOTUNE_DB"])
@pytest.mark.parametrize("name", sorted(MISSING_DB_COMMANDS))
def test_a_mistyped_database_path_is_one_line_and_creates_nothing(name, via, tmp_path):
    # A typo in --db or $AUTOTUNE_DB created an empty database and every missing folder above it,
    # then reported "no verified result" (or "no result with id") as if the db were just empty.
    missing_dir = tmp_path / "no-such-folder"
    db = missing_dir / "deeper" / "typo.sqlite"
    args = list(MISSING_DB_COMMANDS[name])
    if name == "export":
        args += ["-o", str(tmp_path / "best.cu")]
    if name == "report":
        args += ["-o", str(tmp_path / "report")]
    if via == "--db":
        result = invoke(*args, "--db", str(db))
    else:
        result = invoke(*args, env={"AUTOTUNE_DB": str(db)})
    line = assert_one_line_error(result)
    assert "typo.sqlite" in line, line
    assert re.search(r"does not exist|doesn't exist|no such file|not found|no database", line, re.I), line
    assert not db.exists() and not missing_dir.exists(), "the database or its folder was created"
    assert not (tmp_path / "best.cu").exists() and not (tmp_path / "report").exists()


# ------------------------------------------- 4. best and export see emulator results too

@pytest.fixture(scope="module")
def sim_search(tmp_path_factory):
    """One tiny search on the CPU emulator, run as a real process with stderr to a pipe (not a
    TTY); shared by the --backend tests and the log test. Every config of the narrowed space
    (12: naive and tiled with 8x8 blocks) is valid, so each trial is a new measurement."""
    tmp = tmp_path_factory.mktemp("sim")
    db = tmp / "sim.sqlite"
    proc = subprocess.run(
        [sys.executable, "-m", "autotune.cli", "search", "--backend", "sim", *TINY,
         "--family", "naive,tiled", "-p", "T=8", "-p", "bx=8", "-p", "by=8",
         "--trials", str(SIM_TRIALS), "--seed", "0", "--db", str(db)],
        cwd=REPO, env={**os.environ, "AUTOTUNE_CACHE": str(tmp / "cache")}, capture_output=True, timeout=300)
    rc, out, err = proc.returncode, proc.stdout, proc.stderr  # bytes: '\r' must survive
    assert rc == 0, err.decode(errors="replace")[-2000:]
    return db, out, err


def test_best_and_export_take_backend_sim(sim_search, tmp_path):
    # `export` had no --backend, so emulator results could never be exported.
    src, _, _ = sim_search
    db, _ = copy_of(src, tmp_path)
    (best_id, kernel), = query(db, "select id, kernel from results where status='ok' and backend='sim' "
                                   "order by time_ms limit 1")
    result = invoke("best", *TINY, "--backend", "sim", "--json", "--db", str(db))
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["id"] == best_id

    out = tmp_path / "sim-best.cu"
    result = invoke("export", *TINY, "--backend", "sim", "-o", str(out), "--db", str(db))
    assert result.exit_code == 0, result.output
    manifest = json.loads(out.with_suffix(".json").read_text())
    assert manifest["kernel"] == kernel and manifest["measured"]["id"] == best_id
    assert kernel_name_in_source(out.read_text()) == kernel


def test_best_names_the_backend_it_looked_at(sim_search, tmp_path):
    # Only sim rows exist; `best` (default --backend cuda) said "run `autotune search` first"
    # without saying that it had looked at cuda results only.
    src, _, _ = sim_search
    db, _ = copy_of(src, tmp_path)
    line = assert_one_line_error(invoke("best", *TINY, "--db", str(db)))
    assert "cuda" in line, line


def test_export_names_the_backend_it_looked_at(sim_search, tmp_path):
    src, _, _ = sim_search
    db, _ = copy_of(src, tmp_path)
    line = assert_one_line_error(invoke("export", *TINY, "-o", str(tmp_path / "b.cu"), "--db", str(db)))
    assert "cuda" in line, line
    assert not (tmp_path / "b.cu").exists()


@pytest.mark.parametrize("command", ["best", "export"])
def test_backend_replay_is_accepted(command, sim_search, tmp_path):
    # --backend takes cuda, sim and replay; a db without replay rows is then the usual
    # "no verified result" line naming replay (today: click refuses 'replay' / the option).
    src, _, _ = sim_search
    db, _ = copy_of(src, tmp_path)
    extra = ["-o", str(tmp_path / "b.cu")] if command == "export" else []
    line = assert_one_line_error(invoke(command, *TINY, "--backend", "replay", *extra, "--db", str(db)))
    assert "replay" in line and re.search(r"no verified|no result|autotune search", line), line


# ------------------------------------------- 5. one line and exit 2, never a traceback

FOREIGN_DB_COMMANDS = {
    "best": ["best", *TINY],
    "export": ["export", *TINY],  # -o added in the test
    "report": ["report", *TINY],  # -o added in the test
    "render-id": ["render", "--id", "1"],
    "sass-id": ["sass", "--id", "1"],
    "search": ["search", "--backend", "sim", *TINY, "--family", "naive", "-p", "bx=8", "-p", "by=8",
               "--trials", "1"],
}


@pytest.mark.parametrize("name", sorted(FOREIGN_DB_COMMANDS))
def test_a_database_of_another_tool_is_one_line(name, tmp_path):
    # Another tool's SQLite file that happens to have a `results` table: sqlite_utils'
    # AlterError ("No such column: results.id") came out as a traceback, and the file was
    # switched to WAL. It must be refused in one line and left as it was.
    db = tmp_path / "other.sqlite"
    conn = sqlite3.connect(db)
    conn.execute("create table results (x int)")
    conn.commit()
    conn.close()
    original = db.read_bytes()
    args = list(FOREIGN_DB_COMMANDS[name])
    if name == "export":
        args += ["-o", str(tmp_path / "best.cu")]
    if name == "report":
        args += ["-o", str(tmp_path / "report")]
    assert_process_one_line_error(*run_process([*args, "--db", str(db)]))
    assert_untouched(db, original)
    assert not (tmp_path / "best.cu").exists() and not (tmp_path / "report").exists()


@pytest.mark.parametrize("case", ["under-a-file", "cu-is-a-folder", "json-is-a-folder", "header-is-a-folder"])
def test_export_to_an_unwritable_path_is_one_line_and_writes_nothing(case, tmp_path):
    # Paths that cannot be written even as root: below a regular file, or where the .cu or its
    # .json manifest is an existing folder (today: IsADirectoryError traceback, and with a
    # folder at best.json the .cu was already written).
    db, original = copy_of(NAIVE_TILED, tmp_path)
    (tmp_path / "file.txt").write_text("not a folder\n")
    out = {"under-a-file": tmp_path / "file.txt" / "best.cu",
           "cu-is-a-folder": tmp_path / "dir.cu",
           "json-is-a-folder": tmp_path / "manifest.cu", "header-is-a-folder": tmp_path / "header.cu"}[case]
    if case == "cu-is-a-folder":
        out.mkdir()
    if case == "json-is-a-folder":
        out.with_suffix(".json").mkdir()
    if case == "header-is-a-folder":  # the launcher header beside it (best.h)
        out.with_suffix(".h").mkdir()
    assert_process_one_line_error(*run_process(["export", *SHAPE_4096, "-o", str(out), "--db", str(db)]))
    assert (tmp_path / "file.txt").read_text() == "not a folder\n"
    if case in ("json-is-a-folder", "header-is-a-folder"):
        assert not out.exists(), "the .cu was written although its manifest or header could not be"
    assert_untouched(db, original)


@pytest.mark.parametrize("case", ["existing-file", "under-a-file"])
def test_report_to_an_unusable_folder_is_one_line_and_writes_nothing(case, tmp_path):
    # report -o FILE raised FileExistsError, -o FILE/sub NotADirectoryError: tracebacks.
    db, original = copy_of(NAIVE_TILED, tmp_path)
    blocker = tmp_path / "file.txt"
    blocker.write_text("not a folder\n")
    out = blocker if case == "existing-file" else blocker / "report"
    assert_process_one_line_error(*run_process(["report", *SHAPE_4096, "-o", str(out), "--db", str(db)]))
    assert blocker.read_text() == "not a folder\n"
    assert_untouched(db, original)


@pytest.mark.parametrize("command", ["sass", "verify"])
def test_an_unusable_cache_is_one_line(command, tmp_path):
    # $AUTOTUNE_CACHE naming a regular file: mkdir of FILE/cubins raised NotADirectoryError.
    cache = tmp_path / "cache-is-a-file"
    cache.write_text("x")
    db, original = copy_of(NAIVE_TILED, tmp_path)  # an existing db: only the cache is wrong here
    args = {"sass": ["sass", "--family", "tiled", "-p", "T=32", "--db", str(db)],
            "verify": ["verify", "--backend", "sim", "--family", "naive", "--limit", "1", "--shape", "3x3x3"]}[command]
    line = assert_process_one_line_error(*run_process(args, env_extra={"AUTOTUNE_CACHE": str(cache)}))
    assert "AUTOTUNE_CACHE" in line or str(cache) in line, line  # says what to fix
    assert cache.read_text() == "x"
    assert_untouched(db, original)


def test_an_unusable_emulator_cache_is_one_line(tmp_path):
    # The emulator keeps its builds beside the cubins ($AUTOTUNE_CACHE/sim): a file there was a
    # FileExistsError traceback.
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "sim").write_text("x")
    args = ["verify", "--backend", "sim", "--family", "naive", "--limit", "1", "--shape", "3x3x3"]
    line = assert_process_one_line_error(*run_process(args, env_extra={"AUTOTUNE_CACHE": str(cache)}))
    assert "AUTOTUNE_CACHE" in line and "sim" in line, line
    assert (cache / "sim").read_text() == "x"


def test_qmc_without_scipy_is_one_line_and_creates_nothing(tmp_path):
    # --sampler qmc needs scipy (Optuna's QMCSampler); without it the search created the db and
    # then died with ModuleNotFoundError. scipy is hidden in the child whether installed or not.
    db = tmp_path / "q.sqlite"
    argv = ["autotune", "search", "--backend", "sim", *TINY, "--family", "naive", "-p", "bx=8", "-p", "by=8",
            "--trials", "1", "--sampler", "qmc", "--db", str(db)]
    code = ("import sys; sys.modules['scipy'] = None; from autotune.cli import main; "
            f"sys.argv = {argv!r}; main()")
    line = assert_process_one_line_error(*run_process([], python_args=["-c", code]))
    assert "scipy" in line.lower() or "extra" in line.lower(), line
    assert not db.exists()


# ----------------------------------------------------------------------- 8. export details

def test_export_of_a_pre_bswap_row_names_the_kernel_of_its_source(tmp_path):
    # Rows recorded before BSWAP existed: the stored (timed) source's kernel has no _BSW suffix,
    # but the manifest named it ..._BSW0, so a program launching the manifest's name fails.
    db, _ = copy_of(PRE_BSWAP, tmp_path)
    assert "BSWAP" not in {r[1] for r in query(db, "pragma table_info(results)")}  # the premise
    best_id, kernel = fastest_ok(db)
    out = tmp_path / "best.cu"
    result = invoke("export", *SHAPE_4096, "-o", str(out), "--db", str(db))
    assert result.exit_code == 0, result.output
    manifest = json.loads(out.with_suffix(".json").read_text())
    assert manifest["measured"]["id"] == best_id
    in_source = kernel_name_in_source(out.read_text())
    assert manifest["kernel"] == in_source, (manifest["kernel"], in_source)
    assert in_source in manifest["signature"]


def relabel_fastest(tmp_path: Path) -> tuple[Path, int, int]:
    """A copy of a recorded dataset whose fastest row at 4096^3 was measured on another GPU
    model: the fastest row overall is then not the fastest on the H200. (A dataset with a
    `sources` table, so that export attaches the measurement whatever today's templates render.)"""
    db, _ = copy_of(PRE_BSWAP, tmp_path)
    fastest, _ = fastest_ok(db)
    conn = sqlite3.connect(db)
    conn.execute("update results set gpu_name='NVIDIA A100-SXM4-80GB', gpu_uuid='a100-uuid' where id=?", (fastest,))
    conn.commit()
    conn.close()
    h200, _ = fastest_ok(db, gpu="NVIDIA H200")
    assert h200 != fastest
    return db, fastest, h200


def test_export_and_best_select_by_gpu(tmp_path):
    # export picked the fastest row of any GPU model and had no --gpu.
    db, a100, h200 = relabel_fastest(tmp_path)
    for gpu, expected in (("NVIDIA H200", h200), ("NVIDIA A100-SXM4-80GB", a100)):
        result = invoke("best", *SHAPE_4096, "--gpu", gpu, "--json", "--db", str(db))
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["id"] == expected
        out = tmp_path / f"{expected}.cu"
        result = invoke("export", *SHAPE_4096, "--gpu", gpu, "-o", str(out), "--db", str(db))
        assert result.exit_code == 0, result.output
        measured = json.loads(out.with_suffix(".json").read_text())["measured"]
        assert measured["id"] == expected and measured["gpu_name"] == gpu


@pytest.mark.parametrize("command", ["best", "export"])
def test_an_unknown_gpu_is_one_line(command, tmp_path):
    db, _, _ = relabel_fastest(tmp_path)
    out = tmp_path / "best.cu"
    extra = ["-o", str(out)] if command == "export" else []
    line = assert_one_line_error(invoke(command, *SHAPE_4096, "--gpu", "NVIDIA B999", *extra, "--db", str(db)))
    assert "B999" in line, line  # it says which --gpu matched nothing
    assert not out.exists()


def test_manifest_says_when_the_shared_memory_optin_is_needed(tmp_path):
    # A blocked kernel with more than 48 KiB of dynamic shared memory launches only after
    # cudaFuncSetAttribute(MaxDynamicSharedMemorySize); the manifest must say so.
    blocked_db, _ = copy_of(PRE_BSWAP, tmp_path)
    tiled_db, _ = copy_of(NAIVE_TILED, tmp_path)
    manifests = {}
    for name, db in (("blocked", blocked_db), ("tiled", tiled_db)):
        out = tmp_path / f"{name}.cu"
        result = invoke("export", *SHAPE_4096, "-o", str(out), "--db", str(db))
        assert result.exit_code == 0, result.output
        manifests[name] = json.loads(out.with_suffix(".json").read_text())
    blocked, tiled = manifests["blocked"], manifests["tiled"]
    assert blocked["family"] == "blocked" and blocked["dynamic_shared_bytes"] > SHARED_OPTIN_BYTES  # the premise
    assert blocked.get("needs_shared_optin") is True, blocked
    assert tiled["family"] == "tiled" and tiled.get("needs_shared_optin") is False, tiled


# ------------------------------------------------------------------------------- 9. logs

def test_search_into_a_pipe_writes_no_progress_frames(sim_search):
    # With stderr redirected (not a TTY) tqdm still drew its bar: one '\r' frame per update.
    _, _, err = sim_search
    text = err.decode(errors="replace")
    frames = err.count(b"\r")
    assert frames == 0, f"{frames} carriage-return frames: {text[:300]!r}"
    assert len(text.splitlines()) <= SIM_TRIALS + 10, text


def test_no_gpu_hint_works_at_the_shape_asked(tmp_path):
    # On a machine without a GPU, `search --M 4096` said "... or use --backend sim", but the
    # emulator refuses 4096^3. The hint must propose something that works at that size.
    # CUDA_VISIBLE_DEVICES="" hides any GPU, so this runs the same on a GPU host.
    db = tmp_path / "r.sqlite"
    line = assert_process_one_line_error(*run_process(
        ["search", *SHAPE_4096, "--trials", "1", "--db", str(db)], env_extra={"CUDA_VISIBLE_DEVICES": ""}))
    assert "no CUDA device" in line, line
    assert "replay" in line or "--backend sim" in line, line  # it proposes an alternative
    if "--backend sim" in line:
        # then only with a shape the emulator takes (it refuses M*N*K above 2**27, about 512^3)
        small_m = [int(m) for m in re.findall(r"--M[ =](\d+)", line) if int(m) <= 512]
        assert small_m or re.search(r"smaller|at most|up to", line), (
            f"proposes --backend sim at a shape the emulator refuses: {line}")
    assert not db.exists()
