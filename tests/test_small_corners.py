"""benchmarks/small_corners.py on the emulator: every corner gets verified rows of kernels that take a plain call's
short way there (no prologue), blocked's small tiles reading misaligned rows as aligned pairs (MA, MB) and storing
misaligned rows of C through shared memory (CS)."""
from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

from autotune.api.dispatch import takes_short_way
from autotune.families import config_of_row
from autotune.space import Limits
from tests.programs import program

ROOT = Path(__file__).resolve().parent.parent


def test_the_candidates_take_the_short_way_and_read_misaligned_rows_as_they_lie() -> None:
    corners = program("benchmarks", "small_corners")
    SMALL_TILES, candidates = corners.SMALL_TILES, corners.candidates
    for shape in [(2048, 1023, 32), (64, 128, 255), (256, 2048, 128)]:
        found = candidates(shape, Limits())
        assert found and all(takes_short_way(c, shape) for c in found), shape
        tiles = {tuple(c.values[k] for k in ("BM", "BN", "BK", "WM", "WN", "WNITER", "TM", "TN", "MA", "MB"))
                 for c in found if c.family.name == "blocked" and not c.values["CS"]}
        assert {(*t, int(shape[2] % 4 != 0), int(shape[1] % 4 != 0)) for t in SMALL_TILES} <= tiles, shape
        # where C's rows are misaligned, each tile whose TN allows it also stores them through shared memory
        staged = {tuple(c.values[k] for k in ("BM", "BN", "TN")) for c in found if c.family.name == "blocked" and c.values["CS"]}
        expected = {(t[0], t[1], t[7]) for t in SMALL_TILES if t[7] % 4 == 0} if shape[1] % 4 else set()
        assert staged == expected, shape
    # at 2048x1023x32 the fitted default of blocked has a prologue (AL): only the small tiles run there
    assert not any(c.family.name == "blocked" and c.values["AL"] for c in candidates((2048, 1023, 32), Limits()))


def test_where_k_is_long_splitk_tries_its_small_tiles_in_splits_of_a_chunk_of_k() -> None:
    corners = program("benchmarks", "small_corners")
    for shape in [(1024, 64, 511), (64, 128, 4096), (32, 127, 16384)]:
        found = [c for c in corners.candidates(shape, Limits(), ("splitk",)) if c.values["BK"] == 32]
        assert {(c.values["BM"], c.values["BN"]) for c in found} == set(corners.SPLIT_TILES), shape
        low, high = corners.SPLIT_CHUNK
        assert all(low <= shape[2] / c.values["SPLITK"] <= high and c.values["RED"] == 1 for c in found), shape
        assert all(takes_short_way(c, shape) for c in found), shape
    assert all(c.values["BK"] != 32 for c in corners.candidates((512, 4096, 31), Limits(), ("splitk",)))
    assert {c.family.name for c in corners.candidates((1024, 64, 511), Limits(), ("splitk",))} == {"splitk"}


def test_skinny_tries_its_fit_in_its_split_count_and_the_two_beside_it() -> None:
    corners = program("benchmarks", "small_corners")
    from autotune.space import fitted, make_config

    skinny = corners.FAMILIES["skinny"]
    for shape, expected in [((8, 4096, 512), {4, 8, 16}), ((16, 1023, 4095), None), ((8, 16384, 128), {1, 2})]:
        fit = fitted(make_config(skinny, {}), shape, Limits()).values
        found = [c for c in corners.candidates(shape, Limits(), ("skinny",)) if c.values["MB"] == 0]
        splits = {c.values["SPLITK"] for c in found}
        assert fit["SPLITK"] in splits and len(splits) == len(found) >= 2, shape
        assert expected is None or splits == expected, shape
        # all else is the fit's; the partial sums go through the workspace wherever K is split among slices
        assert all({k: v for k, v in c.values.items() if k not in ("SPLITK", "RED")} ==
                   {k: v for k, v in fit.items() if k not in ("SPLITK", "RED")} for c in found), shape
        assert all(c.values["RED"] == int(c.values["SPLITK"] > 1) for c in found), shape


def test_where_n_is_not_a_multiple_of_4_skinny_also_reads_b_as_aligned_pairs() -> None:
    corners = program("benchmarks", "small_corners")
    for shape in [(8, 4095, 512), (16, 16383, 255), (8, 6142, 767)]:
        found = corners.candidates(shape, Limits(), ("skinny",))
        plain = {c.values["SPLITK"] for c in found if c.values["MB"] == 0}
        pairs = [c for c in found if c.values["MB"] == 1]
        # every split count tried plainly is tried with the pairs, through registers (SB=0), A staged or not
        assert {c.values["SPLITK"] for c in pairs} == plain and all(c.values["SB"] == 0 for c in pairs), shape
        assert {c.values["SA"] for c in pairs} == {0, 1}, shape
        assert all(takes_short_way(c, shape) for c in pairs), shape
    # where B's rows are whole 16-byte vectors MB changes nothing: not tried
    assert all(c.values["MB"] == 0 for c in corners.candidates((8, 4096, 512), Limits(), ("skinny",)))


def test_tall_tries_its_small_tiles_in_one_split_and_the_fits() -> None:
    corners = program("benchmarks", "small_corners")
    for shape in [(16384, 16, 256), (16384, 15, 255), (1024, 16, 4095)]:
        found = corners.tall_tiles(corners.FAMILIES["tall"], shape, Limits())
        assert {c.name for c in found} <= {c.name for c in corners.candidates(shape, Limits(), ("tall",))}, shape
        assert {(c.values["ROWS"], c.values["KT"]) for c in found} == {(rows, kt) for rows, _, kt in corners.TALL_TILES}
        assert all(c.values["ST"] == 0 for c in found), shape
        assert 1 in {c.values["SPLITK"] for c in found} and all(takes_short_way(c, shape) for c in found), shape
    # 1024 rows are 16 blocks of 64: the fit's splits are tried beside one
    assert {c.values["SPLITK"] for c in corners.tall_tiles(corners.FAMILIES["tall"], (1024, 16, 4095), Limits())} > {1}


def test_each_corner_gets_verified_rows_on_the_emulator(tmp_path) -> None:
    shapes = tmp_path / "s.toml"
    shapes.write_text('shapes = [\n  { group = "t", M = 8, N = 7, K = 16 },\n  { group = "t", M = 16, N = 16, K = 15 },\n]\n')
    db = tmp_path / "c.sqlite"
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "small_corners.py"), "--backend", "sim", "--shapes",
                          str(shapes), "--db", str(db)], capture_output=True, text=True, check=True).stdout
    assert "[2/2" in out
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    rows = [dict(r) for r in conn.execute("SELECT * FROM results")]
    conn.close()
    assert {(r["M"], r["N"], r["K"]) for r in rows} == {(8, 7, 16), (16, 16, 15)}
    assert all(r["status"] == "ok" for r in rows) and {"blocked", "skinny"} <= {r["family"] for r in rows}
    assert all(takes_short_way(config_of_row(r), (r["M"], r["N"], r["K"])) for r in rows)


def test_a_bad_shapes_file_is_one_line_and_writes_nothing(tmp_path) -> None:
    db = tmp_path / "c.sqlite"
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "small_corners.py"), "--shapes",
                           str(tmp_path / "none.toml"), "--db", str(db)], capture_output=True, text=True)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "cannot read shapes file" in done.stderr
    assert not db.exists()


def test_the_tall_tiles_are_the_probes_fastest() -> None:
    """TALL_TILES' comment: at each of the probe's four shapes its fastest config is one of the first three tiles,
    8 lanes and 256 threads, in one split with A through registers (benchmarks/data/tall-short-k-h100.sqlite.gz)."""
    from tests.committed import committed_database

    corners = program("benchmarks", "small_corners")
    with committed_database("tall-short-k-h100.sqlite.gz") as db:
        fastest = list(db.execute(
            "SELECT ROWS, NR, KT, SPLITK, ST, LANES, THREADS FROM results r WHERE status = 'ok' AND time_ms = "
            "(SELECT min(time_ms) FROM results WHERE M = r.M AND N = r.N AND K = r.K AND status = 'ok')"))
    assert len(fastest) == 4
    assert {f[:3] for f in fastest} <= set(corners.TALL_TILES[:3]) and {f[3:] for f in fastest} == {(1, 0, 8, 256)}
