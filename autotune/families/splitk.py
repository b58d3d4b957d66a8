"""The split-K family: the register-blocked kernel (blocked.py, the same template) with the K loop
divided among SPLITK blocks per tile of C, for shapes whose tiles alone do not fill the GPU (deep K:
1024 x 1024 x 65536 has 64 tiles of 128 x 128 for the H200's 132 SMs, for example; small squares).

Block z of the grid (x, y, SPLITK) computes the partial product over its chunk of K: ceil(K/SPLITK)
rounded up to a multiple of BK, so only the last chunk has a partial BK step (a chunk may be empty
when K is small; its block still takes its turn). With RED=0 the partials are added into C in split
order 0, 1, 2, ... behind a per-tile turnstile (templates/_splitk.cu.j2): ordered, not atomic, so the
output is bit-identical from run to run. With RED=1 each split writes its partial tile to a slot of a
module-level workspace without waiting, and the split that arrives last at the tile's counter sums
the slots in that same order (the same sum, so the same bits): no serial chain of adds. With RED=2
the partials meet in pairs along a fixed binary tree over the splits, the second block of each pair
adding the first's (templates/blocked.cu.j2 says why that is deterministic too): the last block adds
log2(SPLITK) slots, not SPLITK. Every way one launch, no reduction kernel, and the (A, B, C, M, N, K)
signature of every exported kernel. The turnstiles, counters and slots are fixed module-level arrays,
so a shape with more output tiles than MAX_TILES, or (RED=1, 2) more slots than WS_FLOATS holds, is
refused (shape_rules).
A search first measures the default fitted to its shape (fit: blocked's wider tile where the shape
fills it, splits that fill the SMs, a tile halved where M or N is half of it), then the default itself.
"""
from __future__ import annotations

from typing import Callable

from autotune.families.blocked import (
    BLOCKED,
    MAX_ACCUMULATORS,
    accumulators,
    derive_tiles,
    shared_bytes,
    threads,
)
from autotune.families.chunked import chunked_constraints, chunked_params
from autotune.families.short_k import SMALL_TILE, tiles
from autotune.space import Constraint, Family, Launch, Limits, Param, Params, ceil_div, keeps
from autotune.space.devices import PRESETS

MAX_TILES = 1 << 16  # turnstiles, one per output tile: 256 KiB of device memory
WS_FLOATS = 1 << 23  # RED=1, 2: the partial tiles' slots, 32 MiB of device memory in the module
SPLITS = (2, 4, 8, 16, 32, 64)
# Beside them, the splits that fill a device's SMs where C holds one or two tiles (its SMs, half of them): at two
# 128 x 256 tiles 64 splits leave 4 of 132 SMs idle, 66 fill them, and ran 0.8% (256 x 256 x 100000) and 2.0%
# (256 x 256 x 262144) faster on an H100, 0.9% at four 64 x 64 tiles of two blocks an SM (128 x 128 x 100000); 33
# splits of four tiles (200 x 300 x 50000) ran 0.5-0.8% slower than 32, so SMs / 4 is not among them
# (benchmarks/data/splitk-fills-h100.txt). A search walks its own device's (Family.device_values); every named
# device's are in the space, so that a row of any of them reads back.
FILL_TILES = (1, 2)


def fills(limits: Limits) -> tuple[int, ...]:
    """The splits that fill the device's SMs at FILL_TILES tiles, beside SPLITS."""
    return tuple(sorted({limits.sms // t for t in FILL_TILES if limits.sms % t == 0} - set(SPLITS)))


def device_splits(limits: Limits) -> tuple[int, ...]:
    return tuple(sorted({*SPLITS, *fills(limits)}))


ALL_SPLITS = tuple(sorted({s for limits in PRESETS.values() for s in device_splits(limits)}))


def derive(p: Params) -> dict[str, int]:
    # WAVE=0: no tail split (family tailsplit); BLAS=0: the turnstiles are per tile, not per (batch, tile)
    # PAIRS (RED=2): a counter per split of every tile that fits the workspace, at most WS_FLOATS / (BM*BN)
    return {**derive_tiles(p), "MAX_TILES": MAX_TILES, "WS_FLOATS": WS_FLOATS, "PAIRS": WS_FLOATS // (p["BM"] * p["BN"]),
            "WAVE": 0, "BLAS": 0}


def _geometry(p: Params, M: int, N: int) -> Launch:
    tiles_m, tiles_n = ceil_div(M, p["BM"]), ceil_div(N, p["BN"])
    grid = (tiles_n, tiles_m, p["SPLITK"]) if p["GM"] == 1 else (tiles_n * tiles_m, 1, p["SPLITK"])
    return Launch(grid=grid, block=(threads(p), 1, 1), shared_bytes=shared_bytes(p))


def turnstile_rule(tiles, splits, tile: str, fix: str) -> list[str]:
    """The split-K shape rule of every family with turnstiles: one per output tile, a fixed array."""
    if splits == 1 or tiles <= MAX_TILES:
        return []
    return [f"{tiles} output tiles of {tile} exceed the {MAX_TILES} split-K turnstiles (one per tile, a fixed "
            f"array in the module): {fix}"]


def fit_block(p: Params, name: str, values: tuple[int, ...], size: int, keep: frozenset[str] = frozenset()) -> Params:
    """{name: the smallest of `values` that holds `size`} where that is below p[name] and name is not in `keep`:
    rows (or columns) of C per block beyond the problem's are padding, FMAs on zeros (a GEMV-like family's fit)."""
    holding = [v for v in values if v >= size]
    return {name: min(holding)} if name not in keep and holding and min(holding) < p[name] else {}


Tiles = Callable[[Params, int, int], "tuple[int, int]"]
Geometry = Callable[[Params, int, int], Launch]
Rules = Callable[[Params, int, int], "list[str]"]


def split_grid(tiles_of: Tiles, tile: Callable[[Params], str], fix: str) -> tuple[Geometry, Rules]:
    """Geometry and shape rule of a GEMV-like family (skinny, tall): a grid of (tiles along N,
    tiles along M, SPLITK) blocks of THREADS threads, turnstiles when SPLITK > 1."""
    def geometry(p: Params, M: int, N: int) -> Launch:
        tiles_n, tiles_m = tiles_of(p, M, N)
        return Launch(grid=(tiles_n, tiles_m, p["SPLITK"]), block=(p["THREADS"], 1, 1))

    def rules(p: Params, M: int, N: int) -> list[str]:
        tiles_n, tiles_m = tiles_of(p, M, N)
        return turnstile_rule(tiles_n * tiles_m, p["SPLITK"], tile(p), fix)

    return geometry, rules


def slots(p: Params, M: int, N: int) -> int:
    """Floats of partial tiles RED=1 or 2 keeps in the workspace: tiles x SPLITK x BM x BN."""
    return tiles(p, M, N) * p["SPLITK"] * p["BM"] * p["BN"]


def workspace_rule(red: int, kept: int, what: str) -> list[str]:
    """The shape rule of every family that sums splits through the workspace (RED > 0): `kept` floats
    of `what` must fit its WS_FLOATS, a fixed array in the module."""
    if not red or kept <= WS_FLOATS:
        return []
    return [f"RED={red} keeps {kept} floats of {what}, more than the {WS_FLOATS}-float workspace in the module: "
            "use RED=0 or fewer splits"]


def _shape_rules(p: Params, M: int, N: int) -> list[str]:
    return (turnstile_rule(tiles(p, M, N), p["SPLITK"], f"{p['BM']}x{p['BN']}", "use larger BM/BN")
            + workspace_rule(p["RED"], slots(p, M, N), "partial tiles (tiles x SPLITK x BM x BN)"))


REGISTERS_PER_THREAD = 256  # what a kernel of 128 accumulators per thread takes (255 measured): sets blocks per SM
# From this many splits on, the fit sums them through the workspace (RED=1): at 64 splits it beat the
# serial chain by 10%, at 4 or 8 neither won (docs/BENCHMARKS.md as of f793a29, "split-K through a workspace").
LONG_CHAIN = 16
# ... and from this many where a thread holds MAX_ACCUMULATORS outputs: such a kernel takes 252-255
# registers with RED=0 already, so RED=1's sum costs it no occupancy, and it won 1.6-9% at 4 and 8 splits
# (128 x 8192 x 8192, 1024^3, 1024 x 1024 x 65536); with 64 outputs (a 64-row tile) RED=1 took 255
# registers against 181 and lost 0-5% (docs/BENCHMARKS.md as of f793a29, "split-K's reductions", "split-K's tile").
SHORT_CHAIN = 4
# From this many on, in a tree (RED=2): at 64 splits of 256 x 256 x 262144 it took 0.765 ms against RED=1's
# 0.906 (the last split no longer reads 64 slots alone), at 32 it was level; at 4 and 8 it lost 2-13% to
# RED=1 (docs/BENCHMARKS.md as of f793a29, "split-K's reductions").
TREE_FROM = 32
MIN_CHUNK_STEPS = 4  # a split's chunk of K keeps at least this many BK steps (shorter ones are all overhead)
# Where even the most splits K allows leave more than half the SMs without a block (small squares), the
# tile shrinks to SMALL_TILE (families.short_k): at 512^3 on the H200 it ran 0.015 ms with 2-4 splits
# against the wide tile's 0.027 with 8 (32 blocks), level with cuBLAS (docs/BENCHMARKS.md as of f793a29, "the launch path's share, AL=1, small tiles")


def usable_splits(p: Params, K: int, limits: Limits, t: int = 0, at_once: int = 0) -> list[int]:
    """SPLITS that leave each split MIN_CHUNK_STEPS steps of K; given t tiles and at_once resident blocks, also the
    device's split that gives every place one block, at_once / t (more rounds of a fill's many splits would add
    partial tiles for the same 1/rounds of idle places)."""
    fill = {at_once // t} & set(fills(limits)) if t and at_once % t == 0 else set()
    return sorted(s for s in {*SPLITS, *fill} if K // s >= MIN_CHUNK_STEPS * p["BK"])


def _shrunk(q: Params, M: int, N: int, K: int, limits: Limits) -> Params:
    """SMALL_TILE where q's tiles with the most usable splits fill fewer than half the SMs."""
    small = {**q, **SMALL_TILE}
    most = max(usable_splits(q, K, limits), default=1)
    if tiles(q, M, N) * most < limits.sms // 2 and BLOCKED.allows(small, limits):
        return small
    return q


# A small product of long K (M*N*K at most SMALL_PRODUCT, K at least LONG_K) takes a few µs, most of it its
# k-loop's latency: the fit gives it SPLIT_TILE, 32 x 32 with a 32-wide K step, in the splits that leave each a
# chunk of about 128 of K (about 256 from K = 2048), summed through the workspace. At the 196 long-K corners of
# the host-bound lattices (MNK 3.1e7-3.4e7) on an H100 it came within 17% of the fastest kernel measured at each
# (three small split tiles in two split counts, 2% in the geometric mean), and beat the tile this fit chose before
# at every one of them, 2.0x in the geometric mean (benchmarks/data/h100-long-k-corners.sqlite.gz; tests/test_small_tiles.py).
SMALL_PRODUCT = 1 << 25
LONG_K = 255
SPLIT_TILE = {"BM": 32, "BN": 32, "BK": 32, "WM": 16, "WN": 32, "WNITER": 1, "TM": 4, "TN": 4, "STAGES": 2,
              "ASYNC": 0, "BSWAP": 0}


def _small_product(p: Params, shape: tuple[int, int, int], limits: Limits, keep: frozenset[str]) -> Params | None:
    """SPLIT_TILE and its splits for a small product of long K (the comment above); None elsewhere, where the
    constraints refuse it, or where the caller fixed a value of the tile."""
    M, N, K = shape
    if K < LONG_K or M * N * K > SMALL_PRODUCT or not keeps(keep, p, {**p, **SPLIT_TILE}):
        return None
    longest = 192 if K < 2048 else 384  # each split's chunk: at most 1.5x the 128 (256) that ran fastest
    splits = [s for s in SPLITS if K / s <= longest]
    chosen = {"SPLITK": min(splits, default=max(SPLITS)), "RED": 1}
    q = {**p, **SPLIT_TILE, **{name: value for name, value in chosen.items() if name not in keep}}
    return q if SPLITK.allows(q, limits) and not _shape_rules(q, M, N) else None


def fit(p: Params, shape: tuple[int, int, int], limits: Limits, keep: frozenset[str] = frozenset()) -> Params:
    """The default for a shape whose tiles leave SMs idle (none of `keep` changed: Fit). A small product of long
    K takes SPLIT_TILE (above). Otherwise, where M fills BM and N twice BN, the tile is
    widened to the blocked default's (BN doubled, 8 warps); where even the most splits of such tiles
    would leave half the SMs idle, shrunk to SMALL_TILE. A tile twice as tall (wide) as M (N) is
    halved with its warp tile, where the constraints allow: half its FMAs would be on padding. Then
    the split whose rounds of resident blocks take the least time (rounds of 1/SPLITK of a tile's
    work), the fewest splits among equals, of the powers of two and the device's fill that gives every place
    one block (FILL_TILES); none where the tiles fill the GPU or K is too short.
    LONG_CHAIN splits or more (SHORT_CHAIN where a thread's tile is full) are summed through the
    workspace where it holds them (RED=1), TREE_FROM or more in a tree (RED=2)."""
    M, N, K = shape
    small = _small_product(p, shape, limits, keep)
    if small is not None:
        return {name: value for name, value in small.items() if value != p[name]}
    q = dict(p)
    wide = {**q, "BN": 2 * q["BN"]}
    if keeps(keep, q, wide) and M >= q["BM"] and N >= wide["BN"] and BLOCKED.allows(wide, limits):
        q = wide
    if keeps(keep, q, {**q, **SMALL_TILE}):
        q = _shrunk(q, M, N, K, limits)
    for size, tile, warp in ((M, "BM", "WM"), (N, "BN", "WN")):
        halved = {**q, tile: q[tile] // 2, warp: q[warp] // 2}
        if keeps(keep, q, halved) and size <= halved[tile] and BLOCKED.allows(halved, limits):
            q = halved
    per_sm = limits.resident(threads(q), REGISTERS_PER_THREAD)
    at_once, t = limits.sms * per_sm, tiles(q, M, N)
    usable = usable_splits(q, K, limits, t, at_once)
    if "SPLITK" not in keep and t < at_once and usable:
        q["SPLITK"] = min(usable, key=lambda s: (ceil_div(t * s, at_once) / s, s))
    chain = SHORT_CHAIN if accumulators(q) >= MAX_ACCUMULATORS else LONG_CHAIN
    if "RED" not in keep and q["SPLITK"] >= chain and slots(q, M, N) <= WS_FLOATS:
        q["RED"] = 2 if q["SPLITK"] >= TREE_FROM else 1
    return {name: value for name, value in q.items() if value != p[name]}


# Defaults other than blocked's: a 128 x 128 tile with the per-thread shape of the blocked default
# (8 x 4 sub-tiles, 2 along N), which the fit widens to blocked's 128 x 256 where M and N fill it: on the
# H200 the wide tile was 5-10% faster at 128 x 8192 x 8192, 1024 x 1024 x 65536 and 256 x 256 x 262144,
# level at 1024^3; at 64 rows 64 x 128 beat 64 x 256 by 0-4% (docs/BENCHMARKS.md as of f793a29, "split-K's tile").
# ORDER=1 (rows in serpentine): 0.5-1.7% faster than ORDER=0 at 128 x 8192 x 8192, 1024 x 1024 x 65536 and
# 4096 x 11008 x 4096, 1.4% at 64 rows (where ORDER=3 was 3%) (docs/BENCHMARKS.md as of f793a29, "the order of the FMAs").
# EARLY=0: split-K's loops ran 1-26% slower with EARLY=1 (docs/BENCHMARKS.md as of f793a29, "the barrier one k-step early").
DEFAULTS = {"BM": 128, "BN": 128, "WM": 64, "WN": 64, "ORDER": 1, "EARLY": 0}

SPLITK = Family(
    name="splitk",
    doc="register blocking (the blocked template) with K divided among SPLITK blocks per tile, "
        "added into C in split order (deterministic)",
    params=(*chunked_params(BLOCKED.params, DEFAULTS),
            Param("SPLITK", ALL_SPLITS, 8, "blocks per tile of C, each over its own chunk of K"),
            Param("RED", (0, 1, 2), 0, "0: the splits of a tile add into C one after another (turnstiles); 1: each "
                  "writes its partial to a workspace slot, the last to arrive sums them in split order; 2: the "
                  "partials meet in pairs along a fixed binary tree over the splits (the second of a pair adds)",
                  absent=0, named_at_absent=False)),
    constraints=(*chunked_constraints(BLOCKED.constraints),
                 Constraint("RED=1 or 2 needs TN a multiple of 4 (the partial tiles go to the workspace as float4s)",
                            ("RED", "TN"), lambda p, _: p["RED"] == 0 or p["TN"] % 4 == 0)),
    template=BLOCKED.template,
    geometry=_geometry,
    derive=derive,
    tags={**BLOCKED.tags, "SPLITK": "SK", "RED": "RD"},
    shape_rules=_shape_rules,
    fit=fit,
    device_values=lambda limits: {"SPLITK": device_splits(limits)},  # the powers of two and the device's fills
    # its C read-modify-write per split is left out of the traffic: small beside a deep K's operands
    hip=BLOCKED.hip,
    intensity=BLOCKED.intensity,
    bank_model=BLOCKED.bank_model,
    block_tile=lambda p: (p["BM"], p["BN"]),
)
