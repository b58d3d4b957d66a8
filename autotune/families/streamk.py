"""The stream-K family (Osama et al., "Stream-K: Work-centric Parallel Decomposition for Dense Matrix-Matrix
Multiplication on the GPU", PPoPP 2023): the register-blocked kernel (blocked.py; templates/streamk.cu.j2
includes blocked.cu.j2) on a persistent grid whose blocks share the tiles' k-steps, for shapes whose C
holds only a wave or two of tiles while K is long (1024 x 1024 x 16384: 64 tiles of 128 x 128 for 264
resident blocks), where whole tiles leave SMs idle and a split of every tile into equal parts (splitk)
rounds badly.

The grid is SKB blocks per SM of the device, G = SKB x Limits.sms (the device's SM count, not a constant;
geometry reads it). Of the T tiles of C (placed as blocked places its blocks, GM too), the first `whole`
run data-parallel, one block each over all of K, chosen by DP: 0 none; 1 the whole waves, T - T mod G; 2 all
but the last whole wave, T - T mod G - G (at least 0), the paper's "two-tile stream-K + data-parallel",
so that each stream-K block takes 1 to 2 tiles' steps and a cut tile has 2 or 3 parts; all T where T mod G
is 0 (DP 1 and 2). The BK-wide k-steps of the other tiles, tile after tile, are the stream-K region,
S = (T - whole) x ceil(K / BK) steps, dealt to the G blocks in contiguous ranges of q or q + 1 steps
(S = q G + more: the first `more` take q + 1), so no SM idles whatever T is. A block runs its range
segment by segment (a tile it holds whole as blocked does), then its data-parallel tiles b, b + G, ...

Fixup (deterministic, and free of waits). A tile cut across blocks b0 < ... < bj is summed in k order: each
of them writes its partial tile to its own slot of a module-level workspace (two slots per block: the
segment that starts its range and its last one), fences, and adds 1 to the tile's counter (b0's: a block
holds the first step of at most one cut tile); the block that arrives last sums the j + 1 slots in k order,
b0's first, stores C, and sets the counter back to 0 for the next launch. The sum's order is fixed, so C
is bit-identical from run to run whichever block arrives last and in whatever order the blocks run; and no
block ever waits for another, so any dispatch order and any number of resident blocks make progress (the
CPU emulator runs blocks one after another, in either order). splitk's RED=1 sums its slots the same way.
The kernel reads G from gridDim.x: a grid of any size is right (a wrong SM count is slower, never wrong),
up to MAX_BLOCKS, the blocks the workspace holds (blocks beyond it return at once).

Limits: the workspace is WS_FLOATS floats (64 MiB), so SKB x sms blocks of two BM x BN slots each must fit
it (a constraint: 128 x 128 tiles allow 3 blocks per SM of an H200, 128 x 256 one); the kernel counts steps
in 32-bit ints, so a shape whose region could reach 2^31 steps is refused (shape rule).
"""
from __future__ import annotations

from autotune.families.blocked import (
    BLOCKED,
    derive_tiles,
    shared_bytes,
    threads,
)
from autotune.families.chunked import chunked_constraints, chunked_params
from autotune.families.splitk import DEFAULTS as SPLITK_DEFAULTS
from autotune.families.splitk import REGISTERS_PER_THREAD
from autotune.space import MAX_ELEMENTS, Constraint, Family, Launch, Limits, Param, Params, ceil_div, keeps

WS_FLOATS = 1 << 24  # the partial tiles' slots: 64 MiB of device memory in the module
MAX_BLOCKS = 2048  # counters, and so blocks, at most (the workspace may allow fewer)
SKBS = (1, 2, 3, 4)
DPS = (0, 1, 2)
STEPS_LIMIT = 2**31  # the kernel's step indices are ints


def max_blocks(p: Params) -> int:
    """The persistent blocks the workspace holds: two BM x BN slots each."""
    return min(MAX_BLOCKS, WS_FLOATS // (2 * p["BM"] * p["BN"]))


def blocks(p: Params, limits: Limits) -> int:
    """The grid: SKB blocks per SM."""
    return p["SKB"] * limits.sms


def tiles(p: Params, M: int, N: int) -> int:
    return ceil_div(M, p["BM"]) * ceil_div(N, p["BN"])


def whole_tiles(dp: int, t: int, g: int) -> int:
    """The tiles that run data-parallel (the first ones), by policy DP, of t tiles on g blocks."""
    rest = t % g
    if dp == 0:
        return 0
    if dp == 1 or rest == 0:
        return t - rest
    return max(t - rest - g, 0)


def region(p: Params, M: int, N: int, K: int, g: int) -> tuple[int, int, int, int]:
    """(steps per tile, whole tiles, q, more) of a launch of g blocks, as the kernel's streamk_region."""
    t, steps = tiles(p, M, N), ceil_div(K, p["BK"])
    whole = whole_tiles(p["DP"], t, g)
    q, more = divmod((t - whole) * steps, g)
    return steps, whole, q, more


def segments(p: Params, M: int, N: int, K: int, g: int, b: int) -> list[tuple[int, int, int]]:
    """What block b of g runs, in order, as the kernel deals it: (tile, first k-step, k-steps), a whole
    tile being (tile, 0, steps); its stream-K range first, then its data-parallel tiles."""
    steps, whole, q, more = region(p, M, N, K, g)
    begin = b * q + min(b, more)
    end, out = begin + q + (b < more), []
    x = begin
    while x < end:
        t0 = x // steps * steps
        to = min(end, t0 + steps)
        out.append((whole + x // steps, x - t0, to - x))
        x = to
    return out + [(t, 0, steps) for t in range(b, whole, g)]


def derive(p: Params) -> dict[str, int]:
    # SPLITK=1, WAVE=0, RED=0: blocked.cu.j2's split-K and tail-split code stays out; BLAS=0: one product
    g = max_blocks(p)
    return {**derive_tiles(p), "SPLITK": 1, "WAVE": 0, "RED": 0, "BLAS": 0, "MAX_BLOCKS": g,
            "SK_FLOATS": 2 * g * p["BM"] * p["BN"]}


def _geometry(p: Params, M: int, N: int, limits: Limits = Limits()) -> Launch:
    return Launch(grid=(blocks(p, limits), 1, 1), block=(threads(p), 1, 1), shared_bytes=shared_bytes(p))


def _shape_rules(p: Params, M: int, N: int) -> list[str]:
    """The region's steps must stay below 2^31 for every K the shape allows (check_shape: K x max(M, N) < 2^31)."""
    most = tiles(p, M, N) * ceil_div(MAX_ELEMENTS // max(M, N), p["BK"])
    if most < STEPS_LIMIT:
        return []
    return [f"{tiles(p, M, N)} tiles of {p['BM']}x{p['BN']} with up to {MAX_ELEMENTS // max(M, N)} of K in steps of "
            f"{p['BK']} may make {most} stream-K steps, which the kernel's int indices cannot count: use larger tiles or BK"]


def resident(p: Params, limits: Limits) -> int:
    """Blocks of this config an SM of the device holds at once, by threads, registers (REGISTERS_PER_THREAD)
    and shared memory."""
    return limits.resident(threads(p), REGISTERS_PER_THREAD, shared_bytes(p))


# A 128 x 128 tile in eight warps of 32 x 64 (64 outputs a thread; 176 registers, so one block an SM) rather than
# splitk's four of 64 x 64 (128 outputs, 255 registers, two blocks an SM): on an H100, at five few-tile shapes
# (1024 x 1024 x 4096 and x 16384, 1536^3, 2048 x 2048 x 8192, 2176 x 2048 x 2048), 1.007-1.093x as fast, the most
# at the longest K; one block an SM (SKB=1) level with two (benchmarks/data/streamk-warps-h100.txt, docs/streamk.md).
EIGHT_WARPS = {"WM": 32}


def fit(p: Params, shape: tuple[int, int, int], limits: Limits, keep: frozenset[str] = frozenset()) -> Params:
    """The default at a shape (none of `keep` changed: Fit): a tile halved with its warp tile where M (N) is at
    most half of it (half its FMAs would be on padding), else the 128 x 128 tile in EIGHT_WARPS; SKB the blocks an
    SM holds at once (so the grid is one full wave, within the workspace); DP=0 where the tiles are at most one
    wave of that grid (nothing to run data-parallel), else 2 (each stream-K block then takes 1 to 2 tiles' steps,
    and a cut tile has few parts to sum)."""
    M, N, _ = shape
    q = dict(p)
    for size, tile, warp in ((M, "BM", "WM"), (N, "BN", "WN")):
        halved = {**q, tile: q[tile] // 2, warp: q[warp] // 2}
        if keeps(keep, q, halved) and size <= halved[tile] and BLOCKED.allows(halved, limits):
            q = halved
    eight = {**q, **EIGHT_WARPS}
    if (q["BM"], q["BN"], q["WM"], q["WN"]) == (128, 128, 64, 64) and keeps(keep, q, eight) \
            and BLOCKED.allows(eight, limits):
        q = eight
    if "SKB" not in keep:
        fits = [s for s in SKBS if s <= resident(q, limits) and s * limits.sms <= max_blocks(q)]
        q["SKB"] = max(fits, default=SKBS[0])
    if "DP" not in keep:
        q["DP"] = 0 if tiles(q, M, N) <= blocks(q, limits) else 2
    return {name: value for name, value in q.items() if value != p[name]}


# Defaults other than blocked's: splitk's (a 128 x 128 tile, 8 x 4 sub-tiles, ORDER=1, EARLY=0), whose loops
# are chunks of K as these segments are (EARLY=1 spills here: tests/test_streamk.py).
DEFAULTS = SPLITK_DEFAULTS

STREAMK = Family(
    name="streamk",
    doc="register blocking (the blocked template) on a persistent grid of SKB blocks per SM that share the "
        "tiles' k-steps evenly (stream-K); cut tiles summed in k order from a workspace (deterministic)",
    params=(*chunked_params(BLOCKED.params, DEFAULTS),
            Param("SKB", SKBS, 2, "persistent blocks per SM: the grid is SKB x the device's SM count"),
            Param("DP", DPS, 2, "tiles run data-parallel (one block over all of K) before the rest are shared: "
                  "0 none; 1 the whole waves; 2 all but the last whole wave (the last whole and the partial "
                  "wave shared: 1 to 2 tiles' steps per block)")),
    constraints=(*chunked_constraints(BLOCKED.constraints),
                 Constraint("TN must be a multiple of 4 (the partial tiles go to the workspace as float4s)",
                            ("TN",), lambda p, _: p["TN"] % 4 == 0),
                 Constraint(f"SKB x the device's SMs blocks of two BM x BN partial tiles each must fit the "
                            f"{WS_FLOATS}-float workspace in the module (at most {MAX_BLOCKS} blocks)",
                            ("SKB", "BM", "BN"), lambda p, lim: blocks(p, lim) <= max_blocks(p))),
    template="streamk.cu.j2",
    geometry=_geometry,
    derive=derive,
    tags={**BLOCKED.tags, "SKB": "SB", "DP": "DP"},
    shape_rules=_shape_rules,
    fit=fit,
    geometry_reads_limits=True,
    hip=BLOCKED.hip,
    intensity=BLOCKED.intensity,  # its cut tiles' partial sums are left out, as split-K's C
    bank_model=BLOCKED.bank_model,  # blocked's warp tiles and shared layout
    block_tile=lambda p: (p["BM"], p["BN"]),
)
