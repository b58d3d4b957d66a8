"""Smaller tiles for short k-loops: blocked's fit (and tailsplit's, which is blocked's) takes one where K is short
and the default tile would leave SMs idle; split-K takes SMALL_TILE where its splits would (splitk._shrunk).

Where K is short a tile's time is its loads and its stores, which more blocks on the SMs overlap, rather than the
FMAs that a large tile's reuse feeds. On the H200 at 8 host-bound shapes of K 4-355 (benchmarks/release/
small_tiles_check.sh, benchmarks/data/h200-small-tiles.sqlite.gz; tests/test_small_tiles.py holds the rule to it)
the 64 x 64 tile took 7.4 us at 144x10131x4 and 7.2 at 120x12437x16, where the default's 80 and 49 tiles of
128 x 256 had taken 10.5 (cuBLAS 7.5 and 8.0; benchmarks/data/anyshape-covered-h200.json), and 11.3 at 432x838x158
against the 13.9 of the best kernel a cover had found there; the 32 x 64 tile 15.8 against 64 x 64's 20.0 at
43x2170x355, whose 64 x 64 tiles were 34. Longer k-loops keep the large tile, for split-K and stream-K to spread.
"""
from __future__ import annotations

from autotune.space import Family, Limits, Params, ceil_div, keeps

SMALL_TILE = {"BM": 64, "BN": 64, "WM": 32, "WN": 32, "WNITER": 1, "TM": 4, "TN": 4}  # 4 warps of 32 x 32
SMALLER_TILE = {**SMALL_TILE, "BM": 32, "WM": 16}  # 2 warps of 16 x 32
SHORT_K = 512  # at most this K, a k-loop is short (the module's docstring)


def tiles(p: Params, M: int, N: int) -> int:
    return ceil_div(M, p["BM"]) * ceil_div(N, p["BN"])


def smaller_tile(p: Params, shape: tuple[int, int, int], limits: Limits, family: Family,
                 keep: frozenset[str] = frozenset()) -> Params:
    """Where K is short and the family's default tile's tiles are fewer than the SMs: SMALL_TILE, or SMALLER_TILE
    where even SMALL_TILE's would leave half the SMs idle; {} otherwise, where the family's constraints refuse it,
    or where p's tile is not the default's or the smaller one changes a value of `keep` (a tile the caller chose
    stays, whole)."""
    M, N, K = shape
    if K > SHORT_K or any(p[k] != family.param(k).default for k in SMALL_TILE) or tiles(p, M, N) >= limits.sms:
        return {}
    tile = SMALLER_TILE if tiles({**p, **SMALL_TILE}, M, N) < limits.sms // 2 else SMALL_TILE
    smaller = {k: v for k, v in tile.items() if p[k] != v}
    return smaller if smaller and keeps(keep, p, smaller) and family.allows({**p, **smaller}, limits) else {}
