"""The contract of Family.fit (space.config.Fit) over every family that has one: the values a caller fixes
(`keep`, measure's -p) stay, and the rest are derived from them, not from the values the fit would have put
in their place."""
from __future__ import annotations

import pytest

from autotune.families import FAMILIES, SPLITK, STREAMK
from autotune.space import Limits, fitted, make_config, narrow, violations, within
from autotune.space.devices import preset

FITTED = sorted(name for name, family in FAMILIES.items() if family.fit is not None)
# shapes where the fits move the defaults in different ways: few tiles and long K, GEMV-like, short K, large
SHAPES = [(256, 256, 262144), (200, 600, 50000), (2048, 2048, 8192), (1536, 1536, 1536), (16, 8192, 8192),
          (8192, 16, 8192), (512, 512, 512), (4096, 4096, 4096), (96, 96, 4096), (8192, 8192, 64)]
DEVICES = [Limits(), preset("a100")]


@pytest.mark.parametrize("name", FITTED)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("limits", DEVICES, ids=["h200", "a100"])
def test_a_fit_changes_no_value_it_is_told_to_keep(name, shape, limits):
    family = FAMILIES[name]
    assert family.fit is not None
    default = make_config(family, {}).values
    changes = family.fit(default, shape, limits)
    for key in changes:
        kept = family.fit(default, shape, limits, frozenset([key]))
        assert key not in kept and not violations(make_config(family, {**kept, key: default[key]})), key
    assert family.fit({**default, **changes}, shape, limits, frozenset(changes)) == {}


@pytest.mark.parametrize("name", FITTED)
@pytest.mark.parametrize("shape", SHAPES)
def test_keeping_the_values_a_fit_derives_last_changes_nothing_before_them(name, shape):
    # the splits (blocks per SM, data-parallel tiles, reductions) are derived from the tile: keeping the ones the
    # fit chose leaves the tile it chose, and the rest of its answer
    family = FAMILIES[name]
    assert family.fit is not None
    default = make_config(family, {}).values
    changes = family.fit(default, shape, Limits())
    derived = {k: v for k, v in changes.items() if k in ("SKB", "DP", "RED")}
    if derived:
        kept = family.fit({**default, **derived}, shape, Limits(), frozenset(derived))
        assert {**kept, **derived} == changes


def test_a_warp_tile_is_halved_only_with_the_tile_the_caller_did_not_fix():
    # 64 rows: the fit halves the 128-row tile and its warp tile (64 x 64 warps to 32 x 64); asked for 128 rows,
    # the warp tile stays 64 rows (four warps, 128 outputs a thread: 4 splits summed through the workspace),
    # not the halved fit's 32 rows under a tile that was not halved
    shape = (64, 8192, 8192)
    assert SPLITK.fit(make_config(SPLITK, {}).values, shape, Limits()) == {"BM": 64, "WM": 32, "SPLITK": 4}
    values = fitted(make_config(SPLITK, {"BM": 128}), shape, Limits(), {"BM": 128}).values
    assert (values["BM"], values["WM"], values["SPLITK"], values["RED"]) == (128, 64, 4, 1)
    assert not violations(make_config(SPLITK, values))


def test_stream_k_runs_no_tile_data_parallel_where_the_fixed_grid_holds_them_all():
    # eight 32 x 64 warps take 1 block an SM by the fit's register count; fixed at 2, the grid is 264 blocks,
    # which hold 2048 x 2048's 256 tiles at once: nothing is left to run data-parallel (DP=0)
    given = {"WM": 32, "SKB": 2}
    values = fitted(make_config(STREAMK, given), (2048, 2048, 8192), Limits(), given).values
    assert (values["SKB"], values["DP"]) == (2, 0)
    alone = make_config(STREAMK, {"WM": 32}).values  # without SKB fixed: one block an SM, 132 blocks, DP=2 (the default)
    assert STREAMK.fit(alone, (2048, 2048, 8192), Limits()) == {"SKB": 1} and alone["DP"] == 2


def test_a_search_narrowed_to_one_tile_starts_from_the_fit_of_that_tile():
    # -p BN=128 at 256 x 256 x 262144: the fit would widen the tile to 128 x 256 (outside the narrowed space, so
    # the search had no fitted first trial); kept, four 128 x 128 tiles take the 66 splits that fill 264 places
    from autotune.search.ranking import fits

    family = narrow(SPLITK, {"BN": ["128"]})
    moved, _ = fits([family], (256, 256, 262144), Limits())
    assert [(c.values["BN"], c.values["SPLITK"], c.values["RED"]) for c in moved] == [(128, 66, 2)]
    assert within(family, moved[0].values)


def test_measure_fits_the_rest_on_the_device_that_measures(monkeypatch, tmp_path):
    # split-K at 256 x 256 x 262144 fills the SMs: 66 splits of two tiles on 132 SMs, 54 on an A100's 108; a row
    # named by --id (fit None) runs as recorded
    import autotune.api.commands as commands

    class Worker:
        limits, peak_tflops = preset("a100"), 19.5

        def close(self) -> None:
            pass

    seen: list = []
    monkeypatch.setattr(commands, "start_measuring", lambda specs, db_path: ([Worker()], None))
    monkeypatch.setattr("autotune.search.measure.evaluate", lambda db, worker, config, *a, **k: seen.append(config))
    default = make_config(SPLITK, {})
    commands.measure_command((256, 256, 262144), [default], {}, 0, 0, str(tmp_path / "m.sqlite"))
    commands.measure_command((256, 256, 262144), [default], None, 0, 0, str(tmp_path / "m.sqlite"))
    assert [c.values["SPLITK"] for c in seen] == [54, default.values["SPLITK"]]
    assert fitted(default, (256, 256, 262144), Limits()).values["SPLITK"] == 66
