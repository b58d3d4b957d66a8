"""The tail-split family: the register-blocked kernel (blocked.py, the same template) with the last,
partial wave of output tiles split along K, so that it fills the GPU (at 4096^3, 512 tiles of
128 x 256 on the H200's 132 SMs are 3.88 waves: the fourth leaves 16 SMs idle for a whole tile's time).

WAVE is the number of blocks the GPU runs at once (SMs x resident blocks per SM; the H200 has 132
SMs): a search walks the device's own (waves; fit picks SMs x the blocks an SM holds of the config). With T output tiles and rest = T mod WAVE, the first T - rest tiles are one block each over
all of K (whole waves, data-parallel, as in blocked); each of the `rest` tiles of the last wave is
split into `pieces` blocks over consecutive chunks of K (chunks as in splitk), added into C in piece
order behind the turnstiles of templates/_splitk.cu.j2: ordered, not atomic, so the output is
bit-identical from run to run. The grid is 1-D, T - rest + rest * pieces blocks; block b < T - rest
is tile b; a later one, u = b - (T - rest), is piece u // rest of tile T - rest + u % rest
(piece-major). Tile t is placed as blocked places block t (row-major, or GM block-rows grouped for
L2), so GM keeps working: the tail tiles are the last ones of that order. A wrong WAVE makes the
kernel slower, never wrong. The kernel computes rest and pieces from M, N and the constants WAVE and
MAXS (the signature stays (A, B, C, M, N, K)); `pieces` below is the same rule, and a test runs the
kernel's copy against it.

Why the kernel is shaped as it is (measured on the H200, 128 x 256 tiles):
- A whole tile runs family blocked's code. The kernel body is one function template instantiated
  twice, tile_body<false> (kBegin = 0, Kc = K, no turnstile: all of it folds away) and
  tile_body<true> (a piece), each in its own out-of-line function, and the kernel branches once per
  block. Out of line, so that ptxas allocates the whole-tile loop's registers alone: allocated with
  the piece path (one body for both, or both instances inlined), the same FFMAs read other
  registers, about twice the operand register-bank conflicts of blocked's loop by nvdisasm, and ran
  about 7% slower than blocked at 4096^3. The tile index is unsigned because a signed division into row
  and column did the same. That allocation turns on small changes of the PTX, so a change here is
  for the H200 to time (docs/BENCHMARKS.md as of f793a29, "the tail split out of line", has the counts and times).
- ORDER=1 by default (DEFAULTS, rows in serpentine): with it this kernel's whole-tile loop runs 2% faster at
  4096^3 and 8192^3 than with ORDER=0, where blocked's own loop is fastest with ORDER=0 or 3
  (docs/BENCHMARKS.md as of f793a29, "the order of the FMAs").
- EARLY=1 by default (the next tile's first fragments loaded across the barrier, blocked.py): with ORDER=1
  the whole-tile loop runs 2.2-2.4% faster at 4096^3, 2.4% at 4000^3, 3.2% at 8192^3 and 2.8% at
  4096 x 11008 x 4096 than with EARLY=0 (docs/BENCHMARKS.md as of f793a29, "the barrier one k-step early").
- Piece-major order. Tile-major (a tile's pieces at consecutive block indices) runs all pieces of a
  tile side by side, so they finish together and then add into C one after another, each waiting
  for the one before while holding its SM. Piece-major puts a tile's pieces `rest` blocks apart, in
  successive rounds: a piece's predecessor has usually finished, and the adds overlap with compute.
  Progress is kept: the predecessor of a piece has a lower block index (dispatched earlier).
- Batched adds. A piece's read-add-write of C (a 128 x 256 tile) was one L2 round trip per 16 bytes
  (the compiler may not move a load of C past a store to C): 32 round trips per thread. An adding
  piece now reads a sub-tile row's old values (TM x WNITER x TN/4 float4s) before storing any.
- Pieces, not stream-K. Dealing the tail's k-steps evenly to WAVE blocks (two segments a block at most,
  added in the same turnstile order) ran 1-3% slower than these pieces at 2048^3, 4096^3 and 8192^3 in the
  best of four forms that compiled without spills (docs/BENCHMARKS.md as of f793a29, "stream-K for the last wave").
- AL=2 as in blocked (the operands copied first into a workspace padded to whole tiles, where their rows are
  not 16-byte aligned: the fit's default from 1024 rows), so that the whole tiles, nearly all of the work,
  load without an edge; not AL=1, which AL=2 beat at every misaligned shape measured (docs/BENCHMARKS.md as of f793a29,
  "AL=2, operands padded to whole tiles").
- MAXS caps the pieces per tail tile. Each piece pays a prologue and a read-add-write of a tile of
  C, so the best cap depends on the shape and is for the search to find (MAXS=8 at 4096^3 with
  WAVE=132, the H200's SMs, leaves the tail unsplit: there only 9 pieces beat one whole tile).

Pieces per tail tile (a deviation from pieces = WAVE // rest, for the reason that follows): the
number s in 1 .. MAXS that minimises the tail's time, rounds(s) / s tiles' time, where rounds(s) =
ceil(rest * s / WAVE) is the number of rounds in which WAVE blocks run its rest * s pieces; ties go
to the fewest pieces (fewer additions into C). WAVE // rest alone never splits when more than half
of the last wave is busy, the very case of 4096^3 above (rest = 116 of the H200's 132: WAVE // rest = 1, while
9 pieces take 8 rounds of a ninth of a tile, 0.89 of a tile's time instead of 1).
"""
from __future__ import annotations

import functools

from autotune.families.blocked import BLOCKED, derive_tiles, shared_bytes, threads
from autotune.families.chunked import chunked_constraints, chunked_params
from autotune.families.splitk import REGISTERS_PER_THREAD
from autotune.space import Family, Launch, Limits, Param, Params, Value, ceil_div
from autotune.space.devices import PRESETS
from autotune.space.expr import Helper, call, is_expr

BLOCKS_PER_SM = (1, 2, 3, 4)  # the waves a search tries: this many resident blocks on each SM of the device


def waves(limits: Limits) -> tuple[int, ...]:
    """The WAVE values of a device: its SMs times each of BLOCKS_PER_SM."""
    return tuple(k * limits.sms for k in BLOCKS_PER_SM)


# Every named device's waves (space.devices), so that a row of any of them reads back; a search walks
# only its own device's (Family.device_values). The H200's are 132, 264, 396, 528.
WAVES = tuple(sorted({w for limits in PRESETS.values() for w in waves(limits)}))
MAXSES = (2, 4, 8, 16)  # the cap on pieces per tail tile (parameter MAXS)


def pieces(rest: int, wave: int, maxs: int) -> int:
    """Blocks per tile of the last, partial wave of `rest` tiles (1: not split), at most `maxs`.
    For a symbolic rest (space.formula), a call of the exported launchers' copy of this rule."""
    if is_expr(rest):
        return call(_helper(wave, maxs), rest)  # type: ignore[no-any-return]
    best, best_rounds = 1, 1  # unsplit, the rest take one round of a whole tile
    if rest == 0:
        return best
    for s in range(2, maxs + 1):
        rounds = ceil_div(rest * s, wave)
        if rounds * best < best_rounds * s:  # rounds / s < best_rounds / best
            best, best_rounds = s, rounds
    return best


@functools.cache
def _helper(wave: int, maxs: int) -> Helper:
    """pieces() for one WAVE and MAXS, as C and Python text for the exported launchers (the kernel
    has its own copy, templates/blocked.cu.j2 tail_pieces); tests hold both texts to pieces()."""
    name = f"autotune_tail_pieces_w{wave}_s{maxs}"
    c = f"""#ifndef {name.upper()}
#define {name.upper()}
// Blocks per tile of the last, partial wave of `rest` tiles (autotune/families/tailsplit.py, pieces)
static inline long long {name}(long long rest) {{
    long long best = 1, bestRounds = 1;
    if (rest == 0) return best;
    for (long long s = 2; s <= {maxs}; ++s) {{
        const long long rounds = (rest * s + {wave - 1}) / {wave};
        if (rounds * best < bestRounds * s) {{
            best = s;
            bestRounds = rounds;
        }}
    }}
    return best;
}}
#endif"""
    python = f"""def {name}(rest):
    \"\"\"Blocks per tile of the last, partial wave of `rest` tiles (autotune/families/tailsplit.py, pieces).\"\"\"
    best, best_rounds = 1, 1
    if rest == 0:
        return best
    for s in range(2, {maxs} + 1):
        rounds = (rest * s + {wave - 1}) // {wave}
        if rounds * best < best_rounds * s:
            best, best_rounds = s, rounds
    return best
"""
    return Helper(name, c, python, lambda rest: pieces(rest, wave, maxs))


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
    # BLAS=0: the turnstiles are per tile, not per (batch, tile)
    return {**derive_tiles(p), "SPLITK": 1, "MAX_TILES": p["WAVE"], "BLAS": 0, "RED": 0}


def _geometry(p: Params, M: int, N: int) -> Launch:
    return Launch(grid=(blocks(p, M, N), 1, 1), block=(threads(p), 1, 1), shared_bytes=shared_bytes(p))


def fit(p: Params, shape: tuple[int, int, int], limits: Limits, keep: frozenset[str] = frozenset()) -> Params:
    """blocked's fit, and WAVE the blocks the device runs at once: its SMs x the blocks an SM holds (none of
    `keep` changed: Fit)."""
    q = {**p, **BLOCKED.fit(p, shape, limits, keep)} if BLOCKED.fit else dict(p)
    wave = limits.sms * min(limits.resident(threads(q), REGISTERS_PER_THREAD, shared_bytes(q)), BLOCKS_PER_SM[-1])
    if "WAVE" not in keep and wave in WAVES:
        q["WAVE"] = wave
    return {name: value for name, value in q.items() if value != p[name]}


def _device_values(limits: Limits) -> dict[str, tuple[Value, ...]]:
    return {"WAVE": waves(limits)}


DEFAULTS = {"ORDER": 1}  # blocked's defaults otherwise; the module docstring says why

TAILSPLIT = Family(
    name="tailsplit",
    doc="register blocking (the blocked template) with the tiles of the last, partial wave split along K "
        "into pieces that fill it, added into C in piece order (deterministic)",
    params=(*chunked_params(BLOCKED.params, DEFAULTS, al=(0, 2)),
            Param("WAVE", WAVES, waves(Limits())[0], "blocks the GPU runs at once (SMs x resident blocks per SM): "
                                      "the tiles past the last whole wave are split"),
            Param("MAXS", MAXSES, 16, "pieces per tail tile at most (each piece adds a tile of C: "
                                      "more pieces fill the last wave better but add more)")),
    constraints=chunked_constraints(BLOCKED.constraints),
    template=BLOCKED.template,
    geometry=_geometry,
    derive=derive,
    tags={**BLOCKED.tags, "WAVE": "WV", "MAXS": "MS"},
    prologue=BLOCKED.prologue,
    fit=fit,
    device_values=_device_values,
    hip=BLOCKED.hip,
    intensity=BLOCKED.intensity,  # the tail's split adds C's read-modify-write, left out as split-K's
    bank_model=BLOCKED.bank_model,
    block_tile=BLOCKED.block_tile,
)
