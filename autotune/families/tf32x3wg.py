"""The tf32x3wg family: FP32-accurate GEMM on Hopper's warpgroup MMA (wgmma, sm_90a), the 3xTF32 split.

The split is tf32x3's (big = tf32(x), small = tf32(x - big), both rounded to nearest; the product
is big*big + big*small + small*big, small*small dropped), but wgmma reads its operands from shared
memory, not from registers, so they cannot be split on the way in. A prologue kernel (space.Prologue,
`<name>_pre`) therefore writes them once into a workspace, both operands K-major as TF32 wgmma needs
(it has no transposed B):

    [A big: Mp x Kp][A small: Mp x Kp][B big: Np x Kp][B small: Np x Kp]   (B's parts are B transposed)

with Mp = ceil(M/128)*128, Np = ceil(N/BN)*BN and Kp = ceil(K/32)*32, zeros outside A and B, so the
product loads whole tiles with no checks. Each part is stored as the tiles a stage holds (128 or BN
rows by 32, row-tiles outer, k-tiles inner), each tile already in the 128-byte swizzle of shared
memory: a stage is then four contiguous copies, which the copy engine can make (WS=1). The prologue's one-dimensional grid is first the 32 x 32 tiles
of A's part (16-byte reads and writes when K % 4 == 0 and A starts on 16 bytes, 4-byte ones otherwise,
decided in the kernel), then the 32 x 32 tiles of B's, moved through shared memory to transpose them.
The workspace must start on 16 bytes (the product copies it in 16-byte pieces).
The workspace costs 16*(Mp + Np)*Kp bytes and one pass over A and B; the product then reads two floats
per operand value where tf32x3 reads one.

The product: a block of two warpgroups (256 threads) computes a 128 x BN tile of C, each warpgroup 64
rows, with `wgmma.mma_async m64nBNk8 .tf32` (BM = 128 is fixed: one wgmma's 64 rows per warpgroup).
Per k-tile of 32 (one 128-byte row per tile row), the four tiles (A big, A small, B big, B small) come
into a STAGES-deep ring of shared memory in the 128-byte swizzle the wgmma descriptors name (16-byte
chunk c of row r at chunk c ^ (r % 8), tiles on 1024-byte boundaries): with WS=0 by cp.async from all
256 threads, which then meet at a barrier per k-tile; with WS=1 (warp specialization) by a third,
producer warpgroup, one thread of which bulk-copies each stage and counts it on the stage's `full`
mbarrier, while the two MMA warpgroups never meet: each waits for its stage and frees it on the
stage's `empty` mbarrier, so one's promotion and waits run beside the other's MMAs (the producer's
registers go to them: setmaxnreg). Each MMA warpgroup then
issues per k-step of 8 TERMS wgmmas (TERMS=3: big*small, small*big, then big*big, so that the
smaller terms meet the accumulator first, as in tf32x3; TERMS=1: big*big) into accumulators started
afresh each k-tile, which ordinary FP32 adds move into the sums after the k-tile (promotion: the
tensor cores' own accumulation is not IEEE FP32, see tf32x3's PROMOTE). PIPE=1 keeps two accumulator
sets, so that a k-tile's promotion (and the refill of the stage the k-tile before left) overlaps the
next k-tile's MMAs (wgmma.wait_group 1, not 0); its sums are added in the same order, so its C is
PIPE=0's bit for bit. The grid is one-dimensional, ordered in groups of GM row-tiles that share the B
tiles they read while those are in L2.

Why the defaults (measured on an H200, docs/BENCHMARKS.md as of f793a29, "warp specialization, tf32x3wg WS=1"): WS=1, since
with the same tiles and stages it runs 4096^3 in 1.19 ms against WS=0's 1.48 (2.26x cuBLAS SGEMM
against 1.81x, the split included), at 0.27x cuBLAS FP32's error against float64; BN=128 with 3 stages
is WS=1's fastest at 4096^3 (BN=192 with its 2 stages 1.25 ms there, but the fastest at 8192^3: 2.40x
against 2.15x). PIPE=0, since PIPE=1 is no faster with 3 stages (within 3% either way) and 1.4-2x
slower with 2 (it refills a stage one k-tile later, which leaves 2 stages no prefetch). Small products
first: on the emulator's model of the accumulation, 1.5x FP32's error at 17x8x9 against 2.3x with
big*big first.
"""
from __future__ import annotations

from autotune.families.common import WAVE32, tile_intensity
from autotune.families.tf32x3 import PLAIN_TF32, STAGES, TERMS
from autotune.space import ArchNeed, Constraint, Family, Launch, Param, Params, Prologue, ceil_div, round_up

# Rows of C per block: two warpgroups, each the 64 rows of one wgmma m64nNk8. Not a parameter: a block
# of one warpgroup halves the reuse of every B tile, and four exceed the accumulator budget per thread.
BM = 128
BK = 32  # K per k-tile: a tile row is 32 TF32 values, 128 bytes, the width of the 128-byte swizzle
WARPGROUP = 128  # threads: 4 warps issue one wgmma together
MMA_WARPGROUPS = 2
MMA_THREADS = MMA_WARPGROUPS * WARPGROUP
PRODUCER_REGS, CONSUMER_REGS = 40, 232  # WS=1's setmaxnreg: 128*40 + 256*232 fit the 65536 registers of one block
MBARRIER_BYTES = 8
ROW_BYTES = BK * 4
CHUNK = 16  # bytes per cp.async copy
SWIZZLE_PERIOD = 1024  # bytes: eight 128-byte rows, after which the 128-byte swizzle repeats
SPLIT_TILE = 32  # the prologue splits A and transposes B in tiles of 32 x 32
SPLIT_THREADS = SPLIT_TILE * SPLIT_TILE // 4  # a float4 of A's tile per thread
MAX_WGMMA_N = 256
# Floats per thread of accumulators and sums: a thread has 255 registers, and beside these it keeps the
# tiles' addresses, the descriptors, the loop state and the store's indices; ptxas spills past ~200.
MAX_ACCUMULATORS = 192


def threads(p: Params) -> int:
    """The two MMA warpgroups, and with WS=1 the producer's."""
    return MMA_THREADS + p["WS"] * WARPGROUP


def tile_bytes(rows: int) -> int:
    return rows * ROW_BYTES


def stage_bytes(p: Params) -> int:
    """One stage of the ring: A big, A small (128 rows each), B big, B small (BN rows each)."""
    return 2 * tile_bytes(BM) + 2 * tile_bytes(p["BN"])


def shared_bytes(p: Params) -> int:
    """The ring, WS=1's two mbarriers per stage (full, empty), and the slack that rounding the ring's
    base up to a swizzle period can take (the dynamic shared memory is only 16-byte aligned)."""
    return p["STAGES"] * (stage_bytes(p) + p["WS"] * 2 * MBARRIER_BYTES) + SWIZZLE_PERIOD


def accumulators(p: Params) -> int:
    """Floats per thread: BN/2 per accumulator set (one, two with PIPE=1) and BN/2 sums."""
    return p["BN"] // 2 * (2 + p["PIPE"])


def _copies_even(p: Params) -> bool:
    """Every thread copies the same number of 16-byte chunks of each tile (8 per 128-byte row)."""
    return all(rows * (ROW_BYTES // CHUNK) % MMA_THREADS == 0 for rows in (BM, p["BN"]))


def derive(p: Params) -> dict[str, int]:
    return {"BM": BM, "BK": BK, "THREADS": threads(p), "A_BYTES": tile_bytes(BM), "B_BYTES": tile_bytes(p["BN"]),
            "STAGE_BYTES": stage_bytes(p), "SMEM": shared_bytes(p), "ACC": p["BN"] // 2, "SPLIT_THREADS": SPLIT_THREADS,
            "CONSUMER_WARPS": MMA_THREADS // 32, "PRODUCER_REGS": PRODUCER_REGS, "CONSUMER_REGS": CONSUMER_REGS}


def _geometry(p: Params, M: int, N: int) -> Launch:
    return Launch(grid=(ceil_div(M, BM) * ceil_div(N, p["BN"]), 1, 1), block=(threads(p), 1, 1),
                  shared_bytes=shared_bytes(p))


def _prologue(p: Params, M: int, N: int, K: int) -> Prologue:
    """The split: the 32 x 32 tiles of A's part (Mp x Kp), then those of B's (Np x Kp), one block each."""
    rows_a, rows_b, cols = round_up(M, BM), round_up(N, p["BN"]), round_up(K, BK)
    tiles = (ceil_div(M, BM) * (BM // SPLIT_TILE) + ceil_div(N, p["BN"]) * (p["BN"] // SPLIT_TILE)) * ceil_div(K, SPLIT_TILE)
    return Prologue(Launch(grid=(tiles, 1, 1), block=(SPLIT_THREADS, 1, 1)), floats=2 * (rows_a + rows_b) * cols,
                    does="A and B split into big + small TF32 parts, K-major, padded with zeros to whole tiles, in "
                         "the swizzled tiles of a stage")


TF32X3WG = Family(
    name="tf32x3wg",
    doc="Hopper warpgroup MMA (wgmma m64nNk8 TF32, sm_90a) on operands a prologue split into big + small TF32 "
        "parts: FP32-class accuracy from TERMS=3 products, FP32 sums per k-tile, 128-byte-swizzled stages bulk-copied "
        "by a producer warpgroup (WS=1) or by cp.async (WS=0)",
    params=(
        Param("BN", (64, 128, 192), 128, "columns of C per block: the N of each wgmma"),
        STAGES,
        TERMS,
        Param("PIPE", (0, 1), 0, "1: two accumulator sets, a k-tile's promotion into the FP32 sums overlapping the "
              "next k-tile's MMAs (wgmma.wait_group 1); the same sums in the same order as PIPE=0"),
        Param("GM", (1, 8), 8, "row-tiles grouped together in the block order for L2 reuse (1 = row-major order)"),
        Param("WS", (0, 1), 1, "1: warp specialization, a producer warpgroup bulk-copying the stages on mbarriers "
              "and two MMA warpgroups that never meet; 0: all threads copy with cp.async and meet every k-tile"),
    ),
    constraints=(
        Constraint(f"BN must be a multiple of 8 and at most {MAX_WGMMA_N} (wgmma's N)", ("BN",),
                   lambda p, _: p["BN"] % 8 == 0 and p["BN"] <= MAX_WGMMA_N),
        Constraint(f"the threads must copy whole rows of 16-byte chunks evenly ((rows*8) % {MMA_THREADS} == 0 for the "
                   f"{BM} rows of A's tile and the BN of B's), which also makes BN a multiple of the prologue's "
                   f"{SPLIT_TILE}-row tiles", ("BN",), lambda p, _: _copies_even(p) and p["BN"] % SPLIT_TILE == 0),
        Constraint(f"accumulators and sums BN/2*(2+PIPE) floats per thread must be at most {MAX_ACCUMULATORS}, to stay "
                   f"in the 255 registers a thread has beside its addresses (BN=192 fits with PIPE=0 only)",
                   ("BN", "PIPE"), lambda p, _: accumulators(p) <= MAX_ACCUMULATORS),
        Constraint("WS=1 runs PIPE=0's k-tile loop: with two MMA warpgroups that never meet, one's promotion "
                   "already overlaps the other's MMAs, and PIPE's second accumulator set would not fit beside "
                   "BN=192's", ("WS", "PIPE"), lambda p, _: not (p["WS"] and p["PIPE"])),
        Constraint(f"shared memory STAGES*(2*{BM}*128 + 2*BN*128 + WS*16) + {SWIZZLE_PERIOD} bytes must fit the device's "
                   f"per-block limit", ("STAGES", "BN", "WS"), lambda p, lim: shared_bytes(p) <= lim.max_shared_optin),
        PLAIN_TF32,
    ),
    template="tf32x3wg.cu.j2",
    geometry=_geometry,
    derive=derive,
    tags={"STAGES": "S", "TERMS": "X", "PIPE": "PI"},
    prologue=_prologue,
    # wgmma is Hopper's alone: sm_100 and sm_120 have no wgmma (Blackwell's tensor cores take tcgen05 / mma.sync)
    needs=ArchNeed("wgmma (sm_90a: Hopper only)", lambda cc: cc == 90),
    precision="fp32-tc",
    hip=WAVE32,  # refused anyway: inline PTX (wgmma, Hopper's alone)
    intensity=lambda p: tile_intensity(BM, p["BN"], parts=2),  # each operand read as two parts (big, small)
    block_tile=lambda p: (BM, p["BN"]),
)
