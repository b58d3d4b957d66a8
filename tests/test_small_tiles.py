"""blocked's fit takes a smaller tile where K is short and the default's tiles would leave SMs idle
(families.short_k), and the committed H200 measurements behind the rule agree with it."""
import math
import sqlite3

import pytest

from autotune.families import BLOCKED
from autotune.families.short_k import SHORT_K, SMALL_TILE, SMALLER_TILE
from autotune.space import Limits, fitted, make_config, shape_violations, violations
from tests.committed import committed_database

DATA = "h200-small-tiles.sqlite.gz"  # of benchmarks/data (tests.committed)
TILE = ("BM", "BN", "WM", "WN", "WNITER", "TM", "TN")


def tile_of(values) -> dict:
    return {k: values[k] for k in TILE}


def fitted_tile(shape, limits=None) -> dict:
    config = fitted(make_config(BLOCKED, {}), shape, limits or Limits())
    assert not violations(config) and not shape_violations(config, shape[0], shape[1])
    return tile_of(config.values)


@pytest.mark.parametrize("shape, want", [
    ((144, 10131, 4), SMALL_TILE),  # 80 tiles of 128 x 256 on 132 SMs; 477 of 64 x 64
    ((432, 838, 158), SMALL_TILE),  # 98 of 64 x 64: at least half the SMs
    ((43, 2170, 355), SMALLER_TILE),  # 34 of 64 x 64: fewer than half, so 32 x 64
    ((2048, 2048, 2048), None),  # a long k-loop keeps the large tile
    ((1024, 1024, SHORT_K + 1), None),
    ((8192, 8192, 64), None),  # short K, but the tiles fill the SMs
])
def test_a_short_k_with_too_few_tiles_takes_a_smaller_tile(shape, want):
    assert fitted_tile(shape) == (want and {**tile_of(make_config(BLOCKED, {}).values), **want}
                                  or tile_of(make_config(BLOCKED, {}).values))


def test_the_tiles_are_counted_against_the_devices_sms():
    """A GPU of 16 SMs is filled by 80 tiles of 128 x 256 at 144x10131x4: no smaller tile there."""
    assert fitted_tile((144, 10131, 4), Limits(sms=16)) == tile_of(make_config(BLOCKED, {}).values)


def test_the_fits_tile_was_within_three_percent_of_the_fastest_measured_at_each_shape():
    with committed_database(DATA) as db:
        db.row_factory = sqlite3.Row
        rows = [dict(r) for r in db.execute("SELECT * FROM results WHERE status = 'ok'")]
    shapes = {(r["M"], r["N"], r["K"]) for r in rows}
    assert len(shapes) == 8
    for shape in shapes:
        here = [r for r in rows if (r["M"], r["N"], r["K"]) == shape]
        chosen = [r for r in here if tile_of(r) == fitted_tile(shape)]
        assert len(chosen) == 1, shape
        assert chosen[0]["time_ms"] <= 1.03 * min(r["time_ms"] for r in here), shape


def test_a_tile_the_caller_chose_stays():
    given = {"TN": 2, "TM": 8}
    config = fitted(make_config(BLOCKED, given), (144, 10131, 4), Limits(), given)
    assert (config.values["BM"], config.values["BN"]) == (128, 256) and not violations(config)


LONG_K_DATA = "h100-long-k-corners.sqlite.gz"


def test_splitks_fit_for_a_small_product_of_long_k_was_near_the_fastest_and_beat_its_old_choice_everywhere():
    """splitk's fit at small products of long K (families.splitk.SPLIT_TILE), held to the H100's rows at the 196
    long-K corners: each corner has the fit's kernel, the previous fit's (the one row of another K step) and the
    other small split tiles' (benchmarks/small_corners.py --families splitk)."""
    from autotune.families import SPLITK
    from autotune.families.splitk import SPLIT_TILE

    with committed_database(LONG_K_DATA) as db:
        db.row_factory = sqlite3.Row
        rows = [dict(r) for r in db.execute("SELECT * FROM results WHERE status = 'ok'")]
    shapes = sorted({(r["M"], r["N"], r["K"]) for r in rows})
    assert len(shapes) == 196
    near, gained = [], []
    for shape in shapes:
        here = [r for r in rows if (r["M"], r["N"], r["K"]) == shape]
        config = fitted(make_config(SPLITK, {}), shape, Limits())
        assert {k: config.values[k] for k in SPLIT_TILE} == SPLIT_TILE, shape
        mine = [r["time_ms"] for r in here if r["kernel"] == config.name]
        old = [r["time_ms"] for r in here if r["BK"] != SPLIT_TILE["BK"]]
        assert len(mine) == 1 and len(old) == 1, shape
        near.append(mine[0] / min(r["time_ms"] for r in here))
        gained.append(old[0] / mine[0])
    geomean = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs))  # noqa: E731
    assert max(near) <= 1.17 and geomean(near) <= 1.02
    assert min(gained) > 1.0 and round(geomean(gained), 1) == 2.0


@pytest.mark.parametrize("shape", [(1024, 1024, 4096), (512, 4096, 31), (32, 127, 16384), (4096, 4096, 254)])
def test_splitks_fit_keeps_its_tiles_beyond_small_products_of_long_k(shape):
    from autotune.families import SPLITK

    assert fitted(make_config(SPLITK, {}), shape, Limits()).values["BK"] != 32
