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
residues and puts each output back at once by the CRT sum (ozaki_math.crt_signed: two multiply-adds a modulus
and a quotient from doubles, where Garner's steps took about 18 instructions a modulus). BM = 128 and BK = 128
are fixed: one wgmma's 64 rows per warpgroup, and a tile row of 128 int8 is the 128-byte swizzle's width.

Measured on the H200 (docs/ozaki.md): 3.27x cuBLAS SGEMM at 8192^3 and 16384^3 with 7 moduli scaled by the norm
and the 128 x 256 tile, at a quarter of its error; a fixed cost at 8192^2 outputs of the prologue (0.99 ms) and of
the residues kept and put back.

MINB=2 keeps two blocks on an SM, so that one block's integer steps (each modulus' residues kept, the CRT sum
after the last: about 60 instructions an output at 7 moduli, sm_90a) run while the other's MMAs do; with one
block an SM the tensor cores wait through them.
"""
from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from autotune.families.common import WAVE32
from autotune.families.ozaki import B_SPLIT, COLS_PER_PRE, PRE_THREADS, ROWS_PER_PRE, SCALE
from autotune.families.ozaki import residue_every as ozaki_residue_every
from autotune.families.tf32x3wg import (
    BM,
    MAX_WGMMA_N,
    MBARRIER_BYTES,
    MMA_THREADS,
    PRODUCER_REGS,
    SWIZZLE_PERIOD,
    WARPGROUP,
    threads,
)
from autotune.space import ArchNeed, Constraint, Family, Launch, Param, Params, Prologue, ceil_div

if TYPE_CHECKING:
    from autotune.space import Limits

# BM (two warpgroups, each the 64 rows of one wgmma), the threads, the producer's registers, the mbarriers and
# the swizzle's slack are tf32x3wg's: the same block of warpgroups around a different MMA
BK = 128  # int8 per k-tile row: 128 bytes, the width of the 128-byte swizzle; four wgmma k-steps of 32
GM = 8  # row-tiles grouped in the block order, sharing the B tiles they read while those are in L2


def stage_bytes(p: Params) -> int:
    return (BM + p["BN"]) * BK


def shared_bytes(p: Params) -> int:
    """The ring, WS=1's two mbarriers per stage (full, empty), and the slack for rounding the base up."""
    return p["STAGES"] * (stage_bytes(p) + p["WS"] * 2 * MBARRIER_BYTES) + SWIZZLE_PERIOD


def fits_two_blocks(p: Params, lim: Limits) -> bool:
    """MINB=2's registers and shared memory. Registers: ptxas holds each instruction to what MINB blocks leave a
    thread (65536 / (THREADS * MINB)) whatever setmaxnreg raises it to later, and a thread's BN/2 int32 sums
    must fit beside the rest: BN=64 (96 registers with WS=0; 80 with WS=1), or BN=128 with WS=0 (127 of 128);
    with WS=1's 384 threads BN=128's wgmma needs 90 of 80 (ptxas: insufficient registers), and BN=256 needs 128
    for its sums alone. Shared memory: two blocks' stages, each block's slack and the system's share, per SM."""
    registers = p["BN"] == 64 or (p["BN"] == 128 and not p["WS"])
    return registers and 2 * (shared_bytes(p) + lim.reserved_shared_per_block) <= lim.shared_per_sm


def register_split(p: Params) -> tuple[int, int]:
    """WS=1's setmaxnreg (producer, MMA warpgroups): ptxas gives each of the THREADS what MINB blocks leave a thread,
    rounded down to 8 (168 for one block, 80 for two), and a block's warps can only hand registers to each other:
    the producer keeps PRODUCER_REGS (32 with two blocks: its loop needs no more), the MMA warpgroups share the rest,
    rounded down to 8 (232 for one block, as tf32x3wg's; 104 for two)."""
    given = 65536 // (threads(p) * p["MINB"]) // 8 * 8
    producer = PRODUCER_REGS if p["MINB"] == 1 else 32
    return producer, (threads(p) * given - WARPGROUP * producer) // MMA_THREADS // 8 * 8


def residue_every() -> int:
    """k-tiles between reductions of the int32 sums modulo the modulus: ozaki's bound for k-tiles of BK int8."""
    return ozaki_residue_every({"BK": BK})


def derive(p: Params) -> dict[str, int]:
    producer, consumer = register_split(p)
    return {"BM": BM, "BK": BK, "THREADS": threads(p), "PRODUCER_REGS": producer, "CONSUMER_REGS": consumer,
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
        "modulus of the scaled operands' residues, each kept as a byte per output, put back together by the CRT "
        "sum after the last",
    params=(
        # The defaults are the fastest config measured on the H200 that holds the fp32-tc contract on wide inputs
        # too (BN=256 STAGES=4 WS=1, 7 moduli scaled by the norm: 6.55 ms at 8192³, docs/ozaki.md), so that a
        # search measures it first
        Param("BN", (64, 128, 256), 256, "columns of C per block: the N of each wgmma"),
        Param("STAGES", (3, 4, 5, 6), 4, "shared-memory stages filled by cp.async: a stage is refilled two k-tiles after its "
              "own (the MMAs of one k-tile stay in flight through the next), so STAGES-2 k-tiles load ahead"),
        Param("WS", (0, 1), 1, "1: warp specialization, a producer warpgroup bulk-copying every modulus' k-tiles "
              "into the stages on mbarriers, the two MMA warpgroups never meeting; 0: all threads copy with cp.async "
              "and meet every k-tile"),
        Param("MODULI", (6, 7, 8), 7, "moduli, one INT8 product each: more carry more bits of each operand "
              "(ozaki_math.bits) and cost one product more"),
        replace(SCALE, default=1),
        Param("MINB", (1, 2), 1, "blocks an SM holds at once (__launch_bounds__' minimum): with 2, one block's "
              "residues and CRT sums run beside the other's MMAs; registers and stages sized for two",
              absent=1, named_at_absent=False),
    ),
    constraints=(
        Constraint("MINB=2 needs two blocks' registers and shared memory on an SM: BN=64, or BN=128 with WS=0 (a "
                   "thread's BN/2 int32 sums within 65536 / (2 THREADS) registers), and 2 (STAGES stages + slack + the "
                   "system's share of a block) bytes within the SM's shared memory", ("MINB", "BN", "WS", "STAGES"),
                   lambda p, lim: p["MINB"] == 1 or fits_two_blocks(p, lim)),
        Constraint(f"BN must be a multiple of 32 (the prologue's column blocks, whole 16-byte copies per thread) and "
                   f"at most {MAX_WGMMA_N} (wgmma's N)", ("BN",),
                   lambda p, _: p["BN"] % COLS_PER_PRE == 0 and p["BN"] <= MAX_WGMMA_N),
        Constraint(f"shared memory STAGES*(({BM}+BN)*{BK} + WS*16) + {SWIZZLE_PERIOD} bytes must fit the device's "
                   f"per-block limit", ("STAGES", "BN", "WS"), lambda p, lim: shared_bytes(p) <= lim.max_shared_optin),
    ),
    template="ozakiwg.cu.j2",
    geometry=_geometry,
    derive=derive,
    tags={"STAGES": "S", "MODULI": "T", "MINB": "LB"},
    prologue=_prologue,
    # wgmma is Hopper's alone: sm_100 and sm_120 have no wgmma
    needs=ArchNeed("wgmma (sm_90a: Hopper only)", lambda cc: cc == 90),
    precision="fp32-tc",
    hip=WAVE32,  # refused anyway: inline PTX
    intensity=lambda p: 2 * BM * p["BN"] / (p["MODULI"] * (BM + p["BN"])),
    block_tile=lambda p: (BM, p["BN"]),
)
