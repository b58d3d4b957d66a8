"""The ozakiwg family: the Ozaki scheme II (the ozaki family's, docs/ozaki.md) with its INT8 products on
Hopper's warpgroup MMA (wgmma m64nNk32 s8, sm_90a), the H200's full INT8 rate, where ozaki's mma.sync
reaches a part of it.

The prologue is ozaki's (templates/_ozaki.cu.j2: each row of A and column of B scaled by a power of two,
its residues modulo each of MODULI moduli as int8), but it writes the residues as wgmma reads them: both
operands K-major, stored as the tiles a stage holds (128 or BN rows by BK = 128 int8), each in the
128-byte swizzle of shared memory, as tf32x3wg's split does for its TF32 parts:

    [A's residues: MODULI x Mp x Kp][B's: MODULI x Np x Kp][row shifts: Mp int32][column shifts: Np int32]
    [the products' residues: MODULI x Mp x Np bytes]

with Mp = ceil(M/128)*128, Np = ceil(N/BN)*BN, Kp = ceil(K/128)*128 and zeros outside A and B.

The product: a block of two warpgroups (256 threads) computes a 128 x BN tile of C, 64 rows each, one
modulus after another: K in k-tiles of 128 int8 through STAGES cp.async stages, four wgmma k32 a k-tile
into int32 sums (exact: reduced modulo the modulus before they could pass 2^31). Unlike ozaki, which adds
each modulus' sums into a uint64 per output by Garner's step at once, a block here keeps each modulus'
result as its residue, a byte per output, in the workspace (MODULI bytes per output against 8 in
registers): a warpgroup's wgmma needs BN/2 int32 accumulators a thread, and BN/2 uint64 more beside them
would leave no room for BN = 128 or 256. After the last modulus each thread reads back its own outputs'
residues and runs Garner's steps once. BM = 128 and BK = 128 are fixed: one wgmma's 64 rows per
warpgroup, and a tile row of 128 int8 is the 128-byte swizzle's width.

Measured on the H200 (docs/ozaki.md): 2.4-2.5x cuBLAS SGEMM at 8192^3 and 16384^3 with 8 moduli, at a tenth
of its error; a fixed cost at 8192^2 outputs of the prologue (0.83 ms) and of the residues kept and put back.
"""
from __future__ import annotations

from autotune.families.common import WAVE32
from autotune.families.ozaki import B_SPLIT, COLS_PER_PRE, PRE_THREADS, ROWS_PER_PRE, SCALE
from autotune.families.ozaki import residue_every as ozaki_residue_every
from autotune.families.tf32x3wg import (
    BM,
    CONSUMER_REGS,
    MAX_WGMMA_N,
    MBARRIER_BYTES,
    PRODUCER_REGS,
    SWIZZLE_PERIOD,
    threads,
)
from autotune.space import ArchNeed, Constraint, Family, Launch, Param, Params, Prologue, ceil_div

# BM (two warpgroups, each the 64 rows of one wgmma), the threads, the producer's registers, the mbarriers and
# the swizzle's slack are tf32x3wg's: the same block of warpgroups around a different MMA
BK = 128  # int8 per k-tile row: 128 bytes, the width of the 128-byte swizzle; four wgmma k-steps of 32
GM = 8  # row-tiles grouped in the block order, sharing the B tiles they read while those are in L2


def stage_bytes(p: Params) -> int:
    return (BM + p["BN"]) * BK


def shared_bytes(p: Params) -> int:
    """The ring, WS=1's two mbarriers per stage (full, empty), and the slack for rounding the base up."""
    return p["STAGES"] * (stage_bytes(p) + p["WS"] * 2 * MBARRIER_BYTES) + SWIZZLE_PERIOD


def residue_every() -> int:
    """k-tiles between reductions of the int32 sums modulo the modulus: ozaki's bound for k-tiles of BK int8."""
    return ozaki_residue_every({"BK": BK})


def derive(p: Params) -> dict[str, int]:
    return {"BM": BM, "BK": BK, "THREADS": threads(p), "PRODUCER_REGS": PRODUCER_REGS, "CONSUMER_REGS": CONSUMER_REGS,
            "A_BYTES": BM * BK, "B_BYTES": p["BN"] * BK, "STAGE_BYTES": stage_bytes(p), "SMEM": shared_bytes(p),
            "ACC": p["BN"] // 2, "GM": GM, "ROWS_PER_PRE": ROWS_PER_PRE, "B_SPLIT": B_SPLIT,
            "RESIDUE_EVERY": residue_every()}


def _geometry(p: Params, M: int, N: int) -> Launch:
    return Launch(grid=(ceil_div(M, BM) * ceil_div(N, p["BN"]), 1, 1), block=(threads(p), 1, 1),
                  shared_bytes=shared_bytes(p))


def _prologue(p: Params, M: int, N: int, K: int) -> Prologue:
    """ozaki's scaling and residues (Np/32*B_SPLIT blocks of B's columns, then Mp/8 of A's rows) into the tiled workspace,
    which also holds a byte per output and modulus for the products' residues."""
    row_tiles, col_tiles = ceil_div(M, BM), ceil_div(N, p["BN"])
    blocks = row_tiles * (BM // ROWS_PER_PRE) + col_tiles * (p["BN"] // COLS_PER_PRE) * B_SPLIT
    rows, cols = row_tiles * BM, col_tiles * p["BN"]
    depth_words = ceil_div(K, BK) * (BK // 4)  # Kp int8 values are Kp/4 floats
    return Prologue(Launch(grid=(blocks, 1, 1), block=(PRE_THREADS, 1, 1)),
                    floats=p["MODULI"] * (rows + cols) * depth_words + rows + cols + p["MODULI"] * row_tiles * col_tiles
                    * (BM * p["BN"] // 4),
                    does="A's rows and B's columns scaled to integers by powers of two, their residues modulo each "
                         "modulus as int8 in the swizzled tiles of a stage (B transposed), padded with zeros, the "
                         "shifts, and room for the products' residues")


OZAKIWG = Family(
    name="ozakiwg",
    doc="Ozaki scheme II on Hopper's warpgroup MMA (wgmma m64nNk32 s8, sm_90a): one exact INT8 product per "
        "modulus of the scaled operands' residues, each kept as a byte per output, put back together by Garner "
        "after the last",
    params=(
        Param("BN", (64, 128, 256), 128, "columns of C per block: the N of each wgmma"),
        Param("STAGES", (3, 4, 5, 6), 4, "shared-memory stages filled by cp.async: a stage is refilled two k-tiles after its "
              "own (the MMAs of one k-tile stay in flight through the next), so STAGES-2 k-tiles load ahead"),
        Param("WS", (0, 1), 1, "1: warp specialization, a producer warpgroup bulk-copying every modulus' k-tiles "
              "into the stages on mbarriers, the two MMA warpgroups never meeting; 0: all threads copy with cp.async "
              "and meet every k-tile"),
        Param("MODULI", (6, 7, 8), 8, "moduli, one INT8 product each: more carry more bits of each operand "
              "(ozaki_math.bits) and cost one product more"),
        SCALE,
    ),
    constraints=(
        Constraint("BN=256 needs WS=0: its 128 int32 sums a thread spill in WS=1's MMA warpgroups (ptxas, sm_90a: "
                   "2101 local stores), where a block of 384 threads leaves each at most 168 registers at compile time",
                   ("BN", "WS"), lambda p, _: not (p["BN"] == 256 and p["WS"])),
        Constraint(f"BN must be a multiple of 32 (the prologue's column blocks, whole 16-byte copies per thread) and "
                   f"at most {MAX_WGMMA_N} (wgmma's N)", ("BN",),
                   lambda p, _: p["BN"] % COLS_PER_PRE == 0 and p["BN"] <= MAX_WGMMA_N),
        Constraint(f"shared memory STAGES*(({BM}+BN)*{BK} + WS*16) + {SWIZZLE_PERIOD} bytes must fit the device's "
                   f"per-block limit", ("STAGES", "BN", "WS"), lambda p, lim: shared_bytes(p) <= lim.max_shared_optin),
    ),
    template="ozakiwg.cu.j2",
    geometry=_geometry,
    derive=derive,
    tags={"STAGES": "S", "MODULI": "T"},
    prologue=_prologue,
    # wgmma is Hopper's alone: sm_100 and sm_120 have no wgmma
    needs=ArchNeed("wgmma (sm_90a: Hopper only)", lambda cc: cc == 90),
    precision="fp32-tc",
    hip=WAVE32,  # refused anyway: inline PTX
    intensity=lambda p: 2 * BM * p["BN"] / (p["MODULI"] * (BM + p["BN"])),
    block_tile=lambda p: (BM, p["BN"]),
)
