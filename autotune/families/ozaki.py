"""The ozaki family: FP32 GEMM from INT8 tensor-core products, the Ozaki scheme II (docs/ozaki.md).

A prologue kernel (space.Prologue, `<name>_pre`) scales each row of A and each column of B by a power
of two to integers of at most p bits (p = ozaki_math.bits: the largest that keeps every sum of K
products below half the moduli's product), and writes their residues modulo each of MODULI moduli
(odd, at most 255: an int8 holds the symmetric residue) into a workspace, B transposed (K-major, as the
MMA's "col" operand reads it):

    [A's residues: MODULI x Mp x Kp int8][B's: MODULI x Np x Kp int8][row shifts: Mp int32][column shifts: Np int32]

with Mp = ceil(M/BM)*BM, Np = ceil(N/BN)*BN, Kp = ceil(K/BK)*BK and zeros outside A and B, so the product
loads whole tiles without checks.

The product: a block computes a BM x BN tile of C with (BM/32)*(BN/32) warps, a warp 32 x 32 as
2 x 4 tiles of mma.sync m16n8k32 s8 (sm_80+), K walked in BK-byte tiles through STAGES
cp.async stages. For each modulus in turn the int32 sums are exact (reduced modulo the modulus often
enough never to pass 2^31), then reduced and added into one uint64 per output by Garner's step; after the
last modulus the symmetric value, scaled back by the row's and the column's shifts, is C, rounded once
to FP32. Its error is the scaling's (p bits of each row's largest value), not the sum's: MODULI trades
accuracy for speed, and the fp32-tc contract (error at most twice cuBLAS FP32's against float64) decides
by verification which count holds at a shape; where none does the row is `wrong`.

Unmeasured: mma.sync reaches part of the H200's INT8 tensor-core rate (wgmma s8 is the full rate), and
MODULI products per FP32 product; whether that beats cuBLAS SGEMM is for the GPU to say.
"""
from __future__ import annotations

from autotune.families.common import WAVE32
from autotune.families.ozaki_math import MODULI, RESIDUE_MAX
from autotune.space import ArchNeed, Constraint, Family, Launch, Param, Params, Prologue, ceil_div

WARP = 32
MMA_M, MMA_N, MMA_K = 16, 8, 32  # mma.sync.aligned.m16n8k32 .s8
PAD_WORDS = 4  # words of padding per shared-memory row: row strides of 4 (mod 8) words, conflict-free fragment reads
# Registers: each output keeps an int32 sum and a uint64 reconstruction (3), beside the fragments, addresses,
# loop state and Garner's arithmetic (about REGS_BESIDE). Measured by ptxas (sm_90): 64 outputs a thread spill
# (260 local loads and stores, in Garner's steps), 32 do not.
REGS_PER_OUTPUT, REGS_BESIDE = 3, 64
PRE_THREADS = 256
ROWS_PER_PRE = PRE_THREADS // WARP  # A's rows per prologue block: a warp a row
COLS_PER_PRE = 32  # B's columns per prologue block: a lane a column
# Prologue blocks per COLS_PER_PRE columns of B, each scaling a B_SPLIT-th of K after reading all of K for the
# columns' largest |b| (its siblings read the same columns at the same time, mostly from L2). One block a strip
# left B's Np/32 blocks walking K alone; measured on one H200 lease at 8192^3, ozakiwg's prologue took 0.86 ms
# with 1, 0.82 with 2 and 0.88-0.89 with 4 (docs/ozaki.md).
B_SPLIT = 2
INT32_MAX = 2**31 - 1
TILE = ("BM", "BN")
# A warp's tile of C: 32 x 32, (32/16) x (32/8) MMA tiles, 32 outputs a thread. Not a parameter: 64 outputs a
# thread pass its 255 registers (see registers), and smaller warp tiles read each fragment for fewer MMAs.
WM = WN = 32


def threads(p: Params) -> int:
    """Threads per block: a warp per 32 x 32 tile of the block's."""
    return (p["BM"] // WM) * (p["BN"] // WN) * WARP


def outputs() -> int:
    return (WM // MMA_M) * (WN // MMA_N) * 4


def registers() -> int:
    """An estimate of a thread's registers, which times the block's threads must fit an SM's 65536 (ptxas
    spills the 16-warp 128 x 128 block, 512 threads)."""
    return REGS_PER_OUTPUT * outputs() + REGS_BESIDE


def row_words(p: Params) -> int:
    return p["BK"] // 4 + PAD_WORDS


def stage_bytes(p: Params) -> int:
    return (p["BM"] + p["BN"]) * row_words(p) * 4


def shared_bytes(p: Params) -> int:
    return p["STAGES"] * stage_bytes(p)


def residue_every(p: Params) -> int:
    """k-tiles between reductions of the int32 sums modulo the modulus: after one, |sum| < the largest modulus; a
    k-tile adds at most BK * RESIDUE_MAX^2 (ozaki_math's bounds)."""
    return (INT32_MAX - max(MODULI)) // (p["BK"] * RESIDUE_MAX**2)


def intensity(p: Params) -> float:
    """FLOP per DRAM byte of the product's BM x BN tile: per k, BM + BN int8 residues for each of the MODULI
    products, for the 2*BM*BN FLOP of one FP32 product (the prologue's pass over A and B, and the workspace
    it writes, left out)."""
    return 2 * p["BM"] * p["BN"] / (p["MODULI"] * (p["BM"] + p["BN"]))


# The prologue's scaling, ozaki_math's step 1 (both families' prologue is templates/_ozaki.cu.j2's). Off by default
# until a GPU has timed it: its extra pass over A and B is not yet measured.
SCALE = Param("SCALE", (0, 1), 0, "0: each row of A (column of B) scaled by its largest value, which bounds every sum by "
              "K 4^p (ozaki_math.bits); 1: by its norm, which bounds the sums by 4^q whatever K (ozaki_math.norm_bits): "
              "about two bits more a value at K = 4096, so one modulus fewer for the same error; a third pass over A and B",
              absent=0, named_at_absent=False)


def derive(p: Params) -> dict[str, int]:
    return {"THREADS": threads(p), "WM": WM, "WN": WN, "MI": WM // MMA_M, "NJ": WN // MMA_N, "LDW": row_words(p),
            "STAGE_BYTES": stage_bytes(p), "SMEM": shared_bytes(p), "ROWS_PER_PRE": ROWS_PER_PRE,
            "B_SPLIT": B_SPLIT, "RESIDUE_EVERY": residue_every(p)}


def _geometry(p: Params, M: int, N: int) -> Launch:
    return Launch(grid=(ceil_div(N, p["BN"]), ceil_div(M, p["BM"]), 1), block=(threads(p), 1, 1),
                  shared_bytes=shared_bytes(p))


def _prologue(p: Params, M: int, N: int, K: int) -> Prologue:
    """The scaling and residues: Np/32*B_SPLIT blocks of B's columns, then Mp/8 of A's rows (tile counts times
    whole numbers, no division of the shape: the exported launchers derive both as formulas, space.formula)."""
    row_tiles, col_tiles = ceil_div(M, p["BM"]), ceil_div(N, p["BN"])
    blocks = row_tiles * (p["BM"] // ROWS_PER_PRE) + col_tiles * (p["BN"] // COLS_PER_PRE) * B_SPLIT
    rows, cols = row_tiles * p["BM"], col_tiles * p["BN"]
    depth_words = ceil_div(K, p["BK"]) * (p["BK"] // 4)  # Kp int8 values are Kp/4 floats
    return Prologue(Launch(grid=(blocks, 1, 1), block=(PRE_THREADS, 1, 1)),
                    floats=p["MODULI"] * (rows + cols) * depth_words + rows + cols,
                    does="A's rows and B's columns scaled to integers by powers of two, their residues modulo each "
                         "modulus as int8 (B transposed), padded with zeros to whole tiles, and the shifts")


OZAKI = Family(
    name="ozaki",
    doc="Ozaki scheme II: A's rows and B's columns scaled to integers, one exact INT8 tensor-core product "
        "(mma.sync m16n8k32 s8) per modulus of their residues, put back together by the Chinese remainder "
        "theorem (Garner) and scaled back to FP32",
    params=(
        Param("BM", (64, 128), 128, "rows of C per block"),
        Param("BN", (64, 128), 64, "columns of C per block"),
        Param("BK", (64, 128), 64, "K step in int8 values: the width of a stage's tile rows (two or four MMA k-steps)"),
        Param("STAGES", (2, 3, 4), 3, "shared-memory stages filled by cp.async"),
        Param("MODULI", (6, 7, 8), 8, "moduli, one INT8 product each: more carry more bits of each operand "
              "(ozaki_math.bits) and cost one product more"),
        SCALE,
    ),
    constraints=(
        Constraint("threads per block (BM/32)*(BN/32)*32 must not exceed the device limit (1024)", TILE,
                   lambda p, lim: threads(p) <= lim.max_threads_per_block),
        Constraint(f"the block's registers, (BM/32)*(BN/32)*32 threads of about {REGS_PER_OUTPUT} per output (an int32 sum "
                   f"and a uint64 reconstruction each, 32 outputs) and {REGS_BESIDE} beside, must fit the SM's register "
                   f"file, or they spill to local memory", TILE,
                   lambda p, lim: threads(p) * registers() <= lim.regs_per_sm),
        Constraint("shared memory STAGES*(BM+BN)*(BK+16) bytes must fit the device's per-block limit",
                   ("STAGES", "BM", "BN", "BK"), lambda p, lim: shared_bytes(p) <= lim.max_shared_optin),
    ),
    template="ozaki.cu.j2",
    geometry=_geometry,
    derive=derive,
    tags={"STAGES": "S", "MODULI": "T"},
    prologue=_prologue,
    needs=ArchNeed("mma.sync with int8 operands, m16n8k32 (sm_80 or newer)", lambda cc: cc >= 80),
    precision="fp32-tc",
    hip=WAVE32,  # refused anyway: inline PTX
    intensity=intensity,
    block_tile=lambda p: (p["BM"], p["BN"]),
)
