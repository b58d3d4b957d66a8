"""The tail-split family: the register-blocked kernel (blocked.py, the same template) with the last,
partial wave of output tiles split along K, so that it fills the GPU (at 4096^3, 512 tiles of
128 x 256 on 132 SMs are 3.88 waves: the fourth leaves 16 SMs idle for a whole tile's time).

WAVE is the number of blocks the GPU runs at once (SMs x resident blocks per SM; the H200 has 132
SMs). With T output tiles and rest = T mod WAVE, the first T - rest tiles are one block each over
all of K (whole waves, data-parallel, as in blocked); each of the `rest` tiles of the last wave is
split into `pieces` blocks over consecutive chunks of K (chunks as in splitk), added into C in piece
order behind the turnstiles of templates/_splitk.cu.j2: ordered, not atomic, so the output is
bit-identical from run to run. The grid is 1-D, T - rest + rest * pieces blocks; block b < T - rest
is tile b, a later one is piece u % pieces of tile T - rest + u // pieces (u = b - (T - rest)). The
pieces have the highest block indices, so they are dispatched last and fill the last wave, and a
piece waits only for pieces of lower index (dispatched earlier: resident or done), the progress
argument of split-K. Tile t is placed as blocked places block t (row-major, or GM block-rows
grouped for L2), so GM keeps working: the tail tiles are the last ones of that order. A wrong WAVE
makes the kernel slower, never wrong. The kernel computes rest and pieces from M, N and the
constants WAVE and MAX_S (the signature stays (A, B, C, M, N, K)); `pieces` below is the same rule,
and a test runs the kernel's copy against it.

Pieces per tail tile (a deviation from pieces = WAVE // rest, for the reason that follows): the
number s in 1 .. MAX_S that minimises the tail's time, rounds(s) / s tiles' time, where rounds(s) =
ceil(rest * s / WAVE) is the number of rounds in which WAVE blocks run its rest * s pieces; ties go
to the fewest pieces (fewer serial additions into C). WAVE // rest alone never splits when more than
half of the last wave is busy, the very case of 4096^3 above (rest = 116 of 132: WAVE // rest = 1,
while 9 pieces take 8 rounds of a ninth of a tile, 0.89 of a tile's time instead of 1).
"""
from __future__ import annotations

from autotune.families.blocked import BLOCKED, derive_tiles, shared_bytes, threads
from autotune.space import Family, Launch, Param, Params, ceil_div

WAVES = (132, 264, 396, 528)  # 1 to 4 resident blocks on each of the H200's 132 SMs
MAXSES = (2, 4, 8, 16)  # the cap on pieces per tail tile (parameter MAXS)


def pieces(rest: int, wave: int, maxs: int) -> int:
    """Blocks per tile of the last, partial wave of `rest` tiles (1: not split), at most `maxs`."""
    best, best_rounds = 1, 1  # unsplit, the rest take one round of a whole tile
    if rest == 0:
        return best
    for s in range(2, maxs + 1):
        rounds = ceil_div(rest * s, wave)
        if rounds * best < best_rounds * s:  # rounds / s < best_rounds / best
            best, best_rounds = s, rounds
    return best


def tiles(p: Params, M: int, N: int) -> int:
    return ceil_div(M, p["BM"]) * ceil_div(N, p["BN"])


def blocks(p: Params, M: int, N: int) -> int:
    """The grid: one block per tile of the whole waves, `pieces` per tile of the last one."""
    t = tiles(p, M, N)
    rest = t % p["WAVE"]
    return t - rest + rest * pieces(rest, p["WAVE"], p["MAXS"])


def block_work(p: Params, M: int, N: int, block: int) -> tuple[int, int, int]:
    """(tile, piece, pieces) of a block, as the kernel assigns them: the tail's pieces piece-major."""
    t = tiles(p, M, N)
    rest = t % p["WAVE"]
    whole, s = t - rest, pieces(rest, p["WAVE"], p["MAXS"])
    if block < whole:
        return block, 0, 1
    return whole + (block - whole) % rest, (block - whole) // rest, s


def derive(p: Params) -> dict[str, int]:
    # MAX_TILES: the turnstiles, one per tile of the last wave (fewer than WAVE), so no shape is refused
    return {**derive_tiles(p), "SPLITK": 1, "MAX_TILES": p["WAVE"]}


def _geometry(p: Params, M: int, N: int) -> Launch:
    return Launch(grid=(blocks(p, M, N), 1, 1), block=(threads(p), 1, 1), shared_bytes=shared_bytes(p))


TAILSPLIT = Family(
    name="tailsplit",
    doc="register blocking (the blocked template) with the tiles of the last, partial wave split along K "
        "into pieces that fill it, added into C in piece order (deterministic)",
    params=(*BLOCKED.params,
            Param("WAVE", WAVES, 132, "blocks the GPU runs at once (SMs x resident blocks per SM): "
                                      "the tiles past the last whole wave are split"),
            Param("MAXS", MAXSES, 16, "pieces per tail tile at most (each piece adds a tile of C: "
                                      "more pieces fill the last wave better but add more)")),
    constraints=BLOCKED.constraints,
    template=BLOCKED.template,
    geometry=_geometry,
    derive=derive,
    tags={**BLOCKED.tags, "WAVE": "WV", "MAXS": "MS"},
)
