"""Sub-spaces: -p NAME=V1,V2 narrows a search and expands a measure."""
import pytest
from click.testing import CliRunner

from autotune import store
from autotune.cli import cli
from autotune.cli.options import narrow_families, parse_choices, parse_params
from autotune.errors import AutotuneError
from autotune.families import BLOCKED, TILED
from autotune.search.loop import study_name
from autotune.space import count_valid, expand, iter_valid, narrow, valid_configs, within


def test_narrow_restricts_values_and_keeps_names():
    sub = narrow(TILED, {"T": ["32", "64"], "pad": ["0"]})
    configs = valid_configs(sub)
    assert configs and {c.values["T"] for c in configs} == {32, 64}
    assert {c.values["pad"] for c in configs} == {0}
    whole = {c.name for c in valid_configs(TILED)}
    assert {c.name for c in configs} <= whole  # the same kernels, a subset of them
    assert count_valid(sub) == len(configs) < count_valid(TILED)  # caches tell the two apart


def test_narrow_refuses_values_outside_the_space():
    with pytest.raises(AutotuneError, match="outside the space"):
        narrow(TILED, {"T": ["48"]})
    with pytest.raises(AutotuneError, match="no parameter"):
        narrow(TILED, {"BM": ["128"]})


def test_within_and_expand():
    sub = narrow(BLOCKED, {"BM": ["128"], "BN": ["128", "256"]})
    assert within(sub, next(iter_valid(sub)).values)
    assert not within(sub, {**next(iter_valid(sub)).values, "BM": 64})
    configs = expand(BLOCKED, {"BN": ["128", "256"], "BK": ["8", "16"]})
    assert len(configs) == 4 and {(c.values["BN"], c.values["BK"]) for c in configs} == {(128, 8), (128, 16),
                                                                                       (256, 8), (256, 16)}
    assert all(c.values["BM"] == 128 for c in configs)  # the others at their defaults


def test_cli_parsing():
    assert parse_choices(("BM=64,128", "pad=0")) == {"BM": ["64", "128"], "pad": ["0"]}
    with pytest.raises(AutotuneError, match="several values"):
        parse_params(("BM=64,128",))
    with pytest.raises(AutotuneError, match="no family searched"):
        narrow_families([TILED], ("BM=64",))
    [fam] = narrow_families([TILED], ("T=16",))
    assert fam.param("T").values == (16,)


def test_narrowed_study_has_its_own_name():
    whole = study_name([TILED], (64, 64, 64), "sim", "tpe", 0, True)
    sub = study_name(narrow_families([TILED], ("T=16",)), (64, 64, 64), "sim", "tpe", 0, True)
    assert whole == "tiled-64x64x64-sim-tpe" and sub != whole and sub.startswith("tiled~")


def test_search_stays_inside_the_narrowed_space(tmp_path):
    db_path = tmp_path / "r.sqlite"
    args = ["search", "--M", "16", "--family", "tiled", "-p", "T=8", "-p", "pad=0", "--backend", "sim",
            "--trials", "3", "--db", str(db_path)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    rows = list(store.open_db(db_path)["results"].rows)
    assert rows and all(r["T"] == 8 and r["pad"] == 0 for r in rows)
    # a wider search afterwards warm-starts from those rows; a narrower one skips them
    result = CliRunner().invoke(cli, args[:6] + ["T=16"] + args[7:])
    assert result.exit_code == 0, result.output
    rows = list(store.open_db(db_path)["results"].rows)
    assert {r["T"] for r in rows} == {8, 16}  # the second search measured only T=16 configs


def test_measure_list_on_the_emulator(tmp_path):
    db_path = tmp_path / "r.sqlite"
    result = CliRunner().invoke(cli, ["measure", "--M", "16", "--family", "tiled", "-p", "T=8,16", "-p", "pad=0",
                                      "--backend", "sim", "--db", str(db_path)])
    assert result.exit_code == 0, result.output
    kernels = {r["kernel"] for r in store.open_db(db_path)["results"].rows}
    assert kernels == {"sgemm_tiled_T8_bx8_by8_xcols_pad0", "sgemm_tiled_T16_bx16_by16_xcols_pad0"}


def test_measure_takes_unnamed_values_at_the_shape_and_named_ones_as_named(tmp_path):
    """The parameters not named take the family's default at the shape (its fit, as a search's first trial
    has them): NT below PB_MIN_ROWS rows reads B as stored, without a prologue. A named PB=1 stays."""
    from tests.test_transposes import SMALL

    db_path = tmp_path / "r.sqlite"
    tiling = [arg for name, value in SMALL.items() for arg in ("-p", f"{name}={value}")]
    args = ["measure", "--M", "64", "--N", "48", "--K", "40", "--family", "blocked", "--layout", "NT", *tiling,
            "--backend", "sim", "--db", str(db_path)]
    for extra in ([], ["-p", "PB=1"]):
        result = CliRunner().invoke(cli, args + extra)
        assert result.exit_code == 0, result.output
    rows = list(store.open_db(db_path)["results"].rows)
    assert [(r["TB"], r["PB"], r["status"]) for r in rows] == [(1, 0, "ok"), (1, 1, "ok")]
