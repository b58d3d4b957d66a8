"""The tall family: GEMV-like kernels for small N (8192 x 16 x 8192), where the time is reading A
once. The mirror of skinny: there B is streamed and A broadcast; here A is streamed and B shared.

A group of LANES consecutive lanes owns ROWS rows of C and the NR columns of its block. Its lanes
stride over K in float4s, so a warp's load of one row step is 32/LANES rows x LANES*16 bytes, whole
128-byte lines when LANES >= 8 (guarded scalar loads at K's tail or when K % 4 != 0). Each lane keeps
ROWS x NR partial sums. B's KT x NR slice is staged in shared memory, laid out so that the float4 a
lane needs (four k of one column) sits beside its neighbours' (conflict-free) and the lanes of
other groups in the warp read the same address (a broadcast): with LANES = 8 an LDS.128 is one
wavefront for 32 lanes; with LANES = 32 it is four. The group then sums its lanes' partials with a
butterfly of warp shuffles: the same additions in the same order on every run (deterministic),
and every lane holds the sum, so the lanes store different columns of C. N > NR runs ceil(N/NR)
column blocks, each reading A again (mostly from L2: they are neighbours on the grid's x).

Why these parameters pay at 8192 x 16 x 8192: per float4 of A a lane does 4*NR FMAs and NR shared
loads of B serve ROWS rows, so ROWS >= 2 keeps both the FMA pipe and shared memory under the rate
at which HBM delivers A; 8192 rows are too few groups to keep enough loads in flight on the H200's 132 SMs,
so K is split (SPLITK) among blocks that add their partials in split order behind the turnstiles of
templates/_splitk.cu.j2, as the skinny and splitk families do (deterministic). The kernel is capped at
128 registers a thread (16 warps an SM) to keep loads in flight; KT = 64 is the deepest tile at which
the default's A values, partial sums and B stores fit that without spilling (sm_90, NVRTC 13).
The B tile is double-buffered: one barrier a tile. A search first measures the default fitted to the
shape (fit: NR cut to the columns there are, at least 4; splits by K and the rows), then the default.

ST > 0 (stages) replaces the loads into registers with a cp.async pipeline of ST stages in dynamic
shared memory, each one tile: a thread's own float4s of A (As[s][r][tid]) and the tile's B in the
layout above. Tiles t+1 .. t+ST-1 are on their way while tile t is multiplied, so a lane keeps
(ST-1)*QL*ROWS float4s of A in flight instead of paying DRAM's latency once a tile, and B's copies (L2
hits) leave the FMAs' path too; one barrier a tile. The register limits on A and B in flight are then
moot (the stages' bytes bound them). ST = 0 renders the register kernel unchanged, ST left out of its name.
The default is ST = 4: at 8192 x 16 x 8192 it ran in 0.114 ms against the register kernel's 0.134 (ST = 3
matched it, ST = 6 lost occupancy: 0.140), and at 8192 x 1 x 8192 (NR = 4) no slower (docs/BENCHMARKS.md as of f793a29,
"B through shared memory at 16 rows, the tall family's stages").

Misaligned rows of A (K % 4 != 0) are read four floats a step at a time. Reading them as the aligned float4 pairs
that hold them (blocked's MA, templates/_pair4.cu.j2) was tried and lost on an H100: at the tall host-bound
lattice's 20 corners of odd K the fitted default took 1.06-1.28x as long with the pairs
(benchmarks/data/h100-tall-corners.sqlite.gz), and at 8192x16x8191, 16384x8x4095 and 4096x15x16383 1.47-1.68x
(benchmarks/data/tall-pairs-long-k-h100.sqlite.gz), so the family has no such parameter.
"""
from __future__ import annotations

from dataclasses import replace

from autotune.families.common import WAVE32
from autotune.families.splitk import MAX_TILES, fit_block, split_grid
from autotune.space import Constraint, Family, Launch, Limits, Param, Params, ceil_div

MAX_A_IN_FLIGHT = 16  # float4s of A a lane loads per tile before using them (4 registers each)
MAX_B_STAGED = 16  # floats of the B tile a thread holds between loading and storing it
MAX_ACCUMULATORS = 64  # ROWS x NR partial sums a lane keeps in registers
COLUMNS_PER_BLOCK = (1, 2, 4, 8, 16)  # NR
STAGES = (0, 3, 4, 6)  # ST: 0 = A loaded into registers, B staged by plain loads (no pipeline)
SPLITS = (1, 2, 4, 8, 16, 32)


def quads(p: Params) -> int:
    """float4s of one row of A that a lane loads per tile."""
    return p["KT"] // (4 * p["LANES"])


def rows_per_block(p: Params) -> int:
    return p["THREADS"] // p["LANES"] * p["ROWS"]


def b_loads(p: Params) -> int:
    """floats of the B tile each thread stages (the last may fall past the tile)."""
    return ceil_div(p["KT"] * p["NR"], p["THREADS"])


def stage_float4s(p: Params) -> int:
    """ST > 0: float4s of one stage, a tile's A for every thread (QL*ROWS each) and its B (QL x NR rows
    of LANES + 1 float4s, as shared_bytes)."""
    return quads(p) * (p["ROWS"] * p["THREADS"] + p["NR"] * (p["LANES"] + 1))


def stages_bytes(p: Params) -> int:
    """ST > 0: the dynamic shared memory of the ST stages (0 with ST = 0)."""
    return p["ST"] * stage_float4s(p) * 16


def derive(p: Params) -> dict[str, int]:
    return {"QL": quads(p), "BM": rows_per_block(p), "BLOADS": b_loads(p), "MAX_TILES": MAX_TILES,
            "SMEM": stages_bytes(p)}


def shared_bytes(p: Params) -> int:
    """Two buffers of the B tile, each QL x NR rows of LANES + 1 float4s (one of padding, see the
    template)."""
    return 2 * quads(p) * p["NR"] * (p["LANES"] + 1) * 16


def tiles(p: Params, M: int, N: int) -> tuple[int, int]:
    return ceil_div(N, p["NR"]), ceil_div(M, rows_per_block(p))


_split_geometry, _shape_rules = split_grid(tiles, lambda p: f"{rows_per_block(p)}x{p['NR']}",
                                           "use SPLITK=1 or more rows per block")


def _geometry(p: Params, M: int, N: int) -> Launch:
    return replace(_split_geometry(p, M, N), shared_bytes=stages_bytes(p))


# At most this many column blocks for the fit to set the splits: each reads all of A again, so beyond it the
# shape is no longer of the family's kind (a blocked tile reads A once per 128 columns) and the fit stays NR's.
MAX_COLUMN_BLOCKS = 4
MIN_SPLIT_TILES = 2  # KT-row tiles of K a split keeps at least: shorter ones are a partial tile and a turnstile
BLOCKS_PER_SM = 2  # the fit's splits stop where the grid reaches this many blocks an SM


def fit(p: Params, shape: tuple[int, int, int], limits: Limits, keep: frozenset[str] = frozenset()) -> Params:
    """(None of `keep` changed: Fit.) NR cut to the columns there are, at least 4 (NR=4 beat NR=1 by 13-17% at
    8192x1x8192: docs/BENCHMARKS.md as of f793a29). Where the shape is of the family's kind (at most MAX_COLUMN_BLOCKS column blocks), SPLITK: the
    fewest splits whose grid reaches BLOCKS_PER_SM blocks an SM, among those that leave each split MIN_SPLIT_TILES
    tiles of K. That is the default's 4 at its shape, 8192 x 16 x 8192 (128 block-rows), and 1 at K = 108 or 61,
    where the default's 4 splits each took a part of one tile and waited on a turnstile: 11516x4x108 ran 10.9 us
    with 4 splits against cuBLAS's 8.4 (benchmarks/data/anyshape-covered-h200.json, sources 2b04d0b). Where A's rows
    are not whole 16-byte vectors (K % 4 != 0), ST=0, as the stages copy such rows 4 bytes at a time: at 16384x15x255
    and 8192x31x255, of 40 configs that differ in ST alone 36 took longer with ST=4 than with ST=0, on an H100
    (benchmarks/data/tall-short-k-h100.sqlite.gz, tests/test_tall.py)."""
    M, N, K = shape
    q = {**p, **fit_block(p, "NR", COLUMNS_PER_BLOCK, max(N, 4), keep)}
    if K % 4:
        q["ST"] = 0
    tiles_n, tiles_m = tiles(q, M, N)
    if "SPLITK" not in keep and tiles_n <= MAX_COLUMN_BLOCKS:
        usable = [s for s in SPLITS if s == 1 or K >= s * MIN_SPLIT_TILES * q["KT"]]
        q["SPLITK"] = next((s for s in usable if tiles_n * tiles_m * s >= BLOCKS_PER_SM * limits.sms), usable[-1])
    return {k: v for k, v in q.items() if v != p[k]}


TALL = Family(
    name="tall",
    doc="few columns of C per block (small N): A streamed once with 16-byte loads by groups of lanes "
        "along K, B from shared memory, lanes summed by warp shuffles, K optionally split (deterministic)",
    params=(
        # The defaults aim at 8192 x 16 x 8192: 128 block-rows of 64 rows x 4 splits = 512 blocks.
        Param("THREADS", (64, 128, 256, 512), 256, "threads per block (THREADS/LANES groups)"),
        Param("LANES", (4, 8, 16, 32), 8, "lanes of a group, striding over K in float4s; 8: one LDS.128 "
              "wavefront for B and one 128-byte line of A per row and step"),
        Param("ROWS", (1, 2, 4, 8), 2, "rows of C per group (each B value loaded serves ROWS rows)"),
        Param("NR", COLUMNS_PER_BLOCK, 16, "columns of C per block (a lane keeps ROWS x NR sums)"),
        Param("KT", (32, 64, 128, 256, 512), 64, "rows of B staged in shared memory per tile"),
        Param("SPLITK", SPLITS, 4, "blocks per tile of C, each over its own chunk of K"),
        Param("ST", STAGES, 4, "stages of the cp.async pipeline in dynamic shared memory, each a tile of A and "
              "B (0: A loaded into registers a tile at a time, B staged with plain loads)", absent=0,
              named_at_absent=False),
    ),
    constraints=(
        Constraint("a tile of KT rows of B must give each of a group's LANES lanes whole float4s "
                   "(KT % (4*LANES) == 0)", ("KT", "LANES"),
                   lambda p, lim: p["KT"] % (4 * p["LANES"]) == 0),
        # ST = 0 only: with stages the B tile is in dynamic shared memory and A and B go to shared
        # memory by cp.async, not through registers
        Constraint("ST=0: static shared memory 2*KT/(4*LANES)*NR*(LANES+1)*16 bytes must fit the 48 KiB static "
                   "__shared__ limit", ("KT", "LANES", "NR", "ST"),
                   lambda p, lim: p["ST"] > 0 or shared_bytes(p) <= lim.max_static_shared),
        Constraint(f"ST=0: a lane's float4s of A per tile, KT/(4*LANES)*ROWS, are held in registers: at most "
                   f"{MAX_A_IN_FLIGHT}", ("KT", "LANES", "ROWS", "ST"),
                   lambda p, lim: p["ST"] > 0 or quads(p) * p["ROWS"] <= MAX_A_IN_FLIGHT),
        Constraint(f"ST=0: a thread's share of the B tile, KT*NR/THREADS floats, is held in registers: at most "
                   f"{MAX_B_STAGED}", ("KT", "NR", "THREADS", "ST"),
                   lambda p, lim: p["ST"] > 0 or b_loads(p) <= MAX_B_STAGED),
        Constraint("ST>0: the stages, ST*KT/(4*LANES)*(ROWS*THREADS + NR*(LANES+1))*16 bytes of dynamic shared "
                   "memory, must fit the 227 KiB opt-in limit", ("ST", "KT", "LANES", "ROWS", "THREADS", "NR"),
                   lambda p, lim: stages_bytes(p) <= lim.max_shared_optin),
        Constraint(f"a lane's ROWS*NR partial sums are held in registers: at most {MAX_ACCUMULATORS}",
                   ("ROWS", "NR"), lambda p, lim: p["ROWS"] * p["NR"] <= MAX_ACCUMULATORS),
    ),
    template="tall.cu.j2",
    geometry=_geometry,
    derive=derive,
    tags={"THREADS": "T", "LANES": "L", "ROWS": "R", "SPLITK": "SK"},
    shape_rules=_shape_rules,
    fit=fit,
    hip=replace(WAVE32, no_cp_async="ST=0 (A is loaded into registers, B staged by plain loads)"),
    intensity=lambda p: p["NR"] / 2,  # per float4 of A (16 bytes) 4*NR FMAs (B is NR floats beside it)
    block_tile=lambda p: (rows_per_block(p), p["NR"]),
)
