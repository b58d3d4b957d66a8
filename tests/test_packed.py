"""autotune.packed: a gzip'd results database (benchmarks/data's *.sqlite.gz) is read as it is, by every reader,
and never written to."""
from __future__ import annotations

import gzip
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from autotune import store
from autotune.cli import cli
from autotune.errors import AutotuneError
from autotune.packed import unpacked

DATASET = Path(__file__).resolve().parents[1] / "benchmarks" / "data" / "h200-4096-final.sqlite.gz"


@pytest.fixture
def packed(tmp_path) -> Path:
    """A gzip'd copy of a committed dataset in a folder of the test's own."""
    copy = tmp_path / "final.sqlite.gz"
    shutil.copyfile(DATASET, copy)
    return copy


def test_a_plain_path_is_itself_and_a_packed_one_unpacks_once_per_version(packed):
    assert unpacked("some/where.sqlite") == Path("some/where.sqlite")
    plain = unpacked(packed)
    assert plain.name == "final.sqlite" and plain.read_bytes() == gzip.decompress(packed.read_bytes())
    assert unpacked(packed) == plain  # the same version: the same file, not unpacked again
    assert not list(plain.parent.glob("*.part"))
    packed.write_bytes(gzip.compress(b"another version"))
    os.utime(packed, ns=(1, 1))
    again = unpacked(packed)
    assert again != plain and again.read_bytes() == b"another version"


def test_what_is_no_gzip_is_one_line(tmp_path):
    bad = tmp_path / "bad.sqlite.gz"
    bad.write_bytes(b"SQLite format 3\0 but not gzip'd")
    with pytest.raises(AutotuneError, match=r"^cannot unpack database .*bad\.sqlite\.gz: .*; pass --db with an SQLite "
                                            r"file, or one gzip'd whole$"):
        unpacked(bad)
    root = Path(tempfile.gettempdir()) / f"autotune-unpacked-{os.getuid()}"
    assert not list(root.glob("*/bad.sqlite*"))  # neither a plain copy nor a part left behind
    with pytest.raises(AutotuneError):
        unpacked(bad)  # still refused: a failed unpacking leaves no file that a later call would take


def test_the_readers_read_it_and_leave_it_untouched(packed):
    before = packed.read_bytes()
    best = store.best(store.open_readonly(packed), (4096, 4096, 4096))
    assert best is not None and best["status"] == "ok"
    result = CliRunner().invoke(cli, ["best", "--M", "4096", "--db", str(packed)])
    assert result.exit_code == 0 and best["kernel"] in result.output, result.output
    assert packed.read_bytes() == before and sorted(p.name for p in packed.parent.iterdir()) == [packed.name]


def test_a_writer_refuses_it_in_one_line(packed):
    with pytest.raises(AutotuneError, match=r"is gzip'd, which is only read; gunzip it and pass --db"):
        store.open_db(packed)
    result = CliRunner().invoke(cli, ["search", "--M", "64", "--backend", "sim", "--db", str(packed)])
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1, result.output
    assert "is gzip'd, which is only read" in result.output


def test_load_reads_it_as_a_database_of_rows(packed, launcher):
    import autotune

    # its rows are evidence: cuBLAS beat the fastest kernel recorded there, and load() says so
    described = autotune.load(db=str(packed), gpu="NVIDIA H200", launcher=launcher).choose(4096, 4096, 4096).describe()
    assert described.startswith("cuBLAS (the fastest kernel measured at 4096x4096x4096, sgemm_blocked_"), described
    forced = autotune.load(db=str(packed), gpu="NVIDIA H200", launcher=launcher, library=False)
    assert forced.choose(4096, 4096, 4096).measured_at == (4096, 4096, 4096)
