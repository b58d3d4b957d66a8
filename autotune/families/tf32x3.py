"""The tf32x3 family: FP32-accurate GEMM on tensor cores (sm_80+), the 3xTF32 split.

Each operand value x is written as big + small, both TF32 (10 mantissa bits): big = tf32(x) and
small = tf32(x - big), both rounded to nearest (ties away from zero, as `cvt.rna.tf32.f32`).
x - big is exact in FP32, so big + small carries about 21 of x's 24 significand bits. The
product a*b is then big_a*big_b + big_a*small_b + small_a*big_b (small*small, below FP32's
rounding of the sum, is dropped), each a `mma.sync.m16n8k8` with FP32 accumulators. TERMS
picks how many of those products: 3 is the FP32-class kernel; 2 keeps big_a*small_b (A at TF32
precision, B at ~FP32); 1 is plain TF32 (for comparison). The small products are added before
big*big, so the smaller terms meet the accumulator first.

A block computes a BM x BN tile of C with (BM/WM)*(BN/WN) warps; a warp owns WM x WN, as
(WM/16) x (WN/8) MMA tiles of 16 x 8, each thread keeping 4 accumulators per MMA tile. K is
walked in BK-wide tiles staged in shared memory through STAGES buffers filled by cp.async
(16-byte copies when K, N and the pointers allow, 4-byte ones otherwise, zero-filled outside the
matrices: any shape). A's tile is stored row-major with rows padded by 4 floats, B's with rows
padded by 8, which makes every lane's fragment read of a warp hit a different bank (see the
template). The operands are split in registers after the fragment loads, so shared memory and
global traffic are those of one FP32 GEMM; the split costs a few integer ops per value.

Unmeasured: mma.sync reaches only part of the H200's tensor-core peak (wgmma is the full rate);
whether 3 MMAs per product beat cuBLAS SGEMM by 2x with mma.sync is for the GPU to say.
"""
from __future__ import annotations

from autotune.families.common import WAVE32, tile_intensity
from autotune.space import ArchNeed, Constraint, Family, Launch, Limits, Param, Params, ceil_div

WARP = 32
MMA_M, MMA_N, MMA_K = 16, 8, 8  # mma.sync.aligned.m16n8k8 .tf32
PAD_A, PAD_B = 4, 8  # floats of padding per shared-memory row (conflict-free fragment reads)
MAX_ACCUMULATORS = 128  # per thread, as in blocked: beyond it the kernel cannot stay within 255 registers
TILE = ("BM", "BN", "WM", "WN")
# Also tf32x3wg's: the same stages and the same split
STAGES = Param("STAGES", (2, 3, 4), 3, "shared-memory stages filled by cp.async")
TERMS = Param("TERMS", (1, 3), 3, "products per k-step of 8, each a tensor-core MMA: 3 = big*big + big*small + "
              "small*big (FP32-class), 1 = plain TF32 (for comparison, never searched)")
# Also tf32x3wg's. TERMS=1 stays a value (its template path renders for comparisons, and rows recorded
# with it still read back) but no search or verify meets it: under the fp32-tc contract, the only one
# these families are searched under, plain TF32 is always wrong, so it would only waste trials.
PLAIN_TF32 = Constraint("TERMS=1 is plain TF32, whose error (about 2**-11) the fp32-tc contract these families "
                        "are searched under refuses: never searched (TERMS=3 is the FP32-class kernel)", ("TERMS",),
                        lambda p, _: p["TERMS"] != 1)


def tiles_fit(p: Params) -> bool:
    return p["BM"] % p["WM"] == 0 and p["BN"] % p["WN"] == 0


def threads(p: Params) -> int:
    """Threads per block; 0 when the warp tiles do not tile the block tile."""
    return (p["BM"] // p["WM"]) * (p["BN"] // p["WN"]) * WARP if tiles_fit(p) else 0


def accumulators(p: Params) -> int:
    return (p["WM"] // MMA_M) * (p["WN"] // MMA_N) * 4


def stage_floats(p: Params) -> int:
    return p["BM"] * (p["BK"] + PAD_A) + p["BK"] * (p["BN"] + PAD_B)


def shared_bytes(p: Params) -> int:
    return p["STAGES"] * stage_floats(p) * 4


def _loads_even(p: Params) -> bool:
    t = threads(p)
    return t > 0 and (p["BM"] * p["BK"] // 4) % t == 0 and (p["BK"] * p["BN"] // 4) % t == 0


def derive(p: Params) -> dict[str, int]:
    t = threads(p)
    return {"THREADS": t, "MI": p["WM"] // MMA_M, "NJ": p["WN"] // MMA_N, "LDA": p["BK"] + PAD_A,
            "LDB": p["BN"] + PAD_B, "STAGE": stage_floats(p), "SMEM": shared_bytes(p),
            "LA": (p["BM"] * p["BK"] // 4) // t if t else 0, "LB": (p["BK"] * p["BN"] // 4) // t if t else 0}


def fit(p: Params, shape: tuple[int, int, int], limits: Limits, keep: frozenset[str] = frozenset()) -> Params:
    """(STAGES in `keep`: no change, Fit.) The most stages up to the default's that fit the device's shared memory
    per block: the default's 3 take 105 KiB, past the 99 KiB of an sm_86, sm_89 or sm_120 block."""
    fitting = [s for s in STAGES.values if s <= p["STAGES"] and shared_bytes({**p, "STAGES": s}) <= limits.max_shared_optin]
    return {"STAGES": max(fitting)} if "STAGES" not in keep and fitting and max(fitting) != p["STAGES"] else {}


def _geometry(p: Params, M: int, N: int) -> Launch:
    return Launch(grid=(ceil_div(N, p["BN"]), ceil_div(M, p["BM"]), 1), block=(threads(p), 1, 1),
                  shared_bytes=shared_bytes(p))


TF32X3 = Family(
    name="tf32x3",
    doc="tensor cores (mma.sync m16n8k8 TF32) with each operand split into big + small TF32 parts in "
        "registers: FP32-class accuracy from TERMS=3 products, FP32 accumulators, cp.async stages",
    params=(
        Param("BM", (64, 128, 256), 128, "rows of C per block"),
        Param("BN", (64, 128, 256), 128, "columns of C per block"),
        Param("BK", (16, 32), 32, "K step: the width of the A tile and height of the B tile"),
        Param("WM", (32, 64, 128), 64, "rows of C per warp (WM/16 MMA tiles)"),
        Param("WN", (16, 32, 64), 32, "columns of C per warp (WN/8 MMA tiles)"),
        STAGES,
        TERMS,
        Param("PROMOTE", (0, 1), 1, "1: each stage's products go to a fresh accumulator that an ordinary FP32 add "
              "(round to nearest) moves into the sum; the tensor cores' own accumulation is not IEEE FP32, "
              "and over all of K its error grows with K (docs/families.md)"),
    ),
    constraints=(
        Constraint("warp tiles must tile the block tile (BM % WM == 0 and BN % WN == 0)", TILE,
                   lambda p, _: tiles_fit(p)),
        Constraint("threads per block (BM/WM)*(BN/WN)*32 must not exceed the device limit (1024)", TILE,
                   lambda p, lim: threads(p) <= lim.max_threads_per_block),
        Constraint("threads must divide the float4 copies of the A and B tiles evenly ((BM*BK/4) and "
                   "(BK*BN/4) multiples of the thread count)", (*TILE, "BK"), lambda p, _: _loads_even(p)),
        Constraint(f"at most {MAX_ACCUMULATORS} accumulators per thread ((WM/16)*(WN/8)*4, twice that with PROMOTE=1) "
                   f"to stay in registers beside the split fragments", ("WM", "WN", "PROMOTE"),
                   lambda p, _: accumulators(p) * (1 + p["PROMOTE"]) <= MAX_ACCUMULATORS),
        Constraint("shared memory STAGES*(BM*(BK+4) + BK*(BN+8))*4 bytes must fit the device's per-block limit",
                   ("STAGES", "BM", "BK", "BN"), lambda p, lim: shared_bytes(p) <= lim.max_shared_optin),
        PLAIN_TF32,
    ),
    template="tf32x3.cu.j2",
    geometry=_geometry,
    derive=derive,
    tags={"STAGES": "S", "TERMS": "X", "PROMOTE": "PR"},
    fit=fit,
    needs=ArchNeed("mma.sync with TF32 operands (sm_80 or newer)", lambda cc: cc >= 80),
    precision="fp32-tc",
    hip=WAVE32,  # refused anyway: inline PTX
    intensity=lambda p: tile_intensity(p["BM"], p["BN"]),
    block_tile=lambda p: (p["BM"], p["BN"]),
)
