"""The register-blocked family (seed chapter's "chapter 8" techniques) as one template.

A block computes a BM x BN tile of C, walking K in BK-wide steps. Its (BM/WM)*(BN/WN) warps
each own a WM x WN warp tile, split into WMITER x WNITER sub-tiles; inside a sub-tile the 32
lanes form a (32/LANES_N) x LANES_N grid and each lane computes TM x TN outputs. So a thread
holds (WMITER*TM) x (WNITER*TN) accumulators and, per k, reads WMITER*TM + WNITER*TN floats
from shared memory for their product in FMAs. Plain 2D block tiling is the case where the
warp tile is one sub-tile (WNITER = 1 and WMITER = 1).

Global loads are 16 bytes (float4) wherever K, N and the pointers allow; A is stored
transposed in shared memory (As[k][m], rows padded by `pad` floats) so that the inner loop
reads A as well as B with LDS.128. With ASYNC=0, STAGES=2 double-buffers shared memory, fed
by loads held in registers while the previous tile is computed; with ASYNC=1, 2 to 4 stages
are filled by cp.async copies that bypass registers (A transposed with 4-byte copies); a block
whose tiles all lie inside the matrices copies from pointers computed once, without predicates.
Interior tiles of the register path likewise load through one pointer per matrix, advanced once
per tile, and the inner loop reads fragments at constant offsets from per-thread origins, so
the unrolled loop holds almost nothing but LDS and FFMA. BSWAP=1 stores B's columns swapped in
pairs, which moves B fragments to registers of the other bank than their accumulators. ORDER picks
the order of a thread's FMAs within a k-step (rows or columns, plain or serpentine): the same sums
in the same k order, but another PTX, from which ptxas makes another allocation and schedule; which
order is fastest depends on the rest of the kernel and is not predicted by counting register-bank
collisions (docs/BENCHMARKS.md as of f793a29, "the order of the FMAs"), so it is left to the search. EARLY=1 moves the
tile's barrier into its last k-step, after the last reads of its fragments, so that the next tile's first
fragments load from shared memory while the last FMAs run (two sets of fragments in registers), as cuBLAS's
loop does: the same sums in the same order, and like ORDER another allocation for ptxas, so also searched.
TA=1 and TB=1 read A and B stored transposed (cuBLAS's T operands; nn.Linear is x * W^T, TB=1):
the float4 loads then run along the stored rows, A's tile goes into shared memory as it is (no
transpose on the way in) and B's goes in transposed, so everything after shared memory is the same.
(A thread's loads of the stored A tile lie whole rows apart as those of B do: BM/4 <= 64 divides
the threads, a multiple of 32 that is at least 64 when BM = 256 since WM <= 128.)
BLAS=1 kernels take the cuBLAS-style arguments of autotune/space/blas.py (leading dimensions, alpha,
beta, strided batches; grid z = batch) and store alpha * acc + beta * C; 16-byte loads then need the
leading dimension, the stored row length and the pointer all to allow them. Families splitk and
tailsplit leave BLAS out: their turnstiles are per tile, not per (batch, tile).
GM groups block-rows for L2 reuse; MINB is the `__launch_bounds__` minimum of resident blocks
(a register cap). AL=1 (NN, plain signature) first copies A and B, by a prologue kernel, into a
workspace whose rows are padded to multiples of 4 floats, so that the product's loads are 16-byte
ones where K or N is not a multiple of 4 (4097 x 4095 x 4093): the kernel is the same, reading the
padded rows with their strides. AL=2 pads them to whole tiles, rows and columns, so that besides no block
loads at an edge (the kernel's load bounds are the padded ones; C is stored within M x N).
CS=1 changes how C is stored where its rows are not whole 16-byte vectors (N % 4 != 0): rather than each
lane writing its TN floats one at a time (a warp's store touching LANES_N places TN floats apart in each
row), every sub-tile of a warp goes into the warp's own part of shared memory and back out a row at a time,
consecutive lanes to consecutive columns (staging_bytes; measured in docs/pytorch.md: a fitted default takes
it, _fit). MA=1 and MB=1 do the same for the loads of A's and B's rows where they are not whole 16-byte
vectors: a thread's four values are read as the one or two aligned float4s that hold them (ASYNC=0 only).
"""
from __future__ import annotations

from autotune.families.common import WAVE32, tile_intensity
from autotune.families.short_k import smaller_tile
from autotune.space import Constraint, Family, Launch, Limits, Param, Params, Prologue, Value, ceil_div, round_up

MAX_ACCUMULATORS = 128  # per thread; beyond it the kernel cannot stay within 255 registers
CS_PAD = 4  # floats after each staged row of C (CS=1): see staging_bytes
WARP = 32
TILE = ("BM", "BN", "WM", "WN")  # what the thread count reads
LANES = ("WN", "WNITER", "TN", "WM", "TM")  # what the lane layout reads


def lanes_n(p: Params) -> int:
    """Lanes of a warp along N inside one sub-tile (0 if the shapes do not fit)."""
    wsubn = p["WN"] // p["WNITER"]
    return wsubn // p["TN"] if p["WN"] % p["WNITER"] == 0 and wsubn % p["TN"] == 0 else 0


def wsubm(p: Params) -> int:
    """Rows of C in one sub-tile: the warp's lanes along M times TM (0 if the lanes do not fit)."""
    ln = lanes_n(p)
    return (WARP // ln) * p["TM"] if ln and WARP % ln == 0 else 0


def wmiter(p: Params) -> int:
    """Sub-tiles of a warp along M (0 if they do not fit exactly)."""
    rows = wsubm(p)
    return p["WM"] // rows if rows and p["WM"] % rows == 0 else 0


def tiles_fit(p: Params) -> bool:
    return p["BM"] % p["WM"] == 0 and p["BN"] % p["WN"] == 0


def threads(p: Params) -> int:
    """Threads per block; 0 when the warp tiles do not tile the block tile."""
    return (p["BM"] // p["WM"]) * (p["BN"] // p["WN"]) * WARP if tiles_fit(p) else 0


def shared_bytes(p: Params) -> int:
    """The block's dynamic shared memory: its stages, or CS=1's staging of C where that is larger."""
    return max(stage_bytes(p), staging_bytes(p)) if p.get("CS", 0) else stage_bytes(p)


def stage_bytes(p: Params) -> int:
    return p["STAGES"] * p["BK"] * (p["BM"] + p["pad"] + b_row(p)) * 4


def staging_bytes(p: Params) -> int:
    """CS=1: each warp's part of shared memory holds one of its sub-tiles of C, WSUBM rows of WSUBN floats
    padded by 4 (rows stay 16-byte aligned for the float4 writes, and consecutive rows start 4 banks apart)."""
    return threads(p) // WARP * wsubm(p) * (p["WN"] // p["WNITER"] + CS_PAD) * 4


def b_row(p: Params) -> int:
    """Floats per row of the B tile in shared memory: when the kernel reads B stored N x K, B goes in
    transposed like A does (NN's A), so it takes the same padding against the same bank conflicts."""
    return p["BN"] + (p["pad"] if reads_b_transposed(p) else 0)


def reads_b_transposed(p: Params) -> bool:
    """The kernel's own launch reads B stored N x K: TB=1, unless PB=1's prologue transposed it."""
    return p.get("TB", 0) == 1 and p.get("PB", 0) == 0


XPOSE_TILE = 64  # PB=1's prologue moves 64 x 64 tiles of B with 256 threads (templates/_transpose.cu.j2)
ALIGN_THREADS = 256  # AL's prologues: a float4 of the workspace per thread (templates/_align.cu.j2)


def _prologue(p: Params, M: int, N: int, K: int) -> Prologue | None:
    """PB=1: B (N x K) transposed into a K x N workspace before the product (one-dimensional grid).
    AL=1: B and A copied into a workspace with their rows padded to multiples of 4 floats; AL=2: padded to whole
    tiles, rows and columns (multiples of BK, BN, BM)."""
    if p.get("AL", 0):
        if p["AL"] == 2:  # B as Kp x Np, A as Mp x Kp; each row of W a run of blocks
            kp, np_, mp = round_up(K, p["BK"]), round_up(N, p["BN"]), round_up(M, p["BM"])
            floats, grid = kp * np_ + mp * kp, kp * ceil_div(np_, 4 * ALIGN_THREADS) + mp * ceil_div(kp, 4 * ALIGN_THREADS)
            padded = "rows and columns padded to whole tiles"
        else:  # B as K x Np, A as M x Kp; W's float4s in order
            floats = K * round_up(N, 4) + M * round_up(K, 4)
            grid, padded = ceil_div(floats, 4 * ALIGN_THREADS), "rows padded to multiples of 4 floats"
        return Prologue(Launch(grid=(grid, 1, 1), block=(ALIGN_THREADS, 1, 1)), floats=floats,
                        does=f"B (K x N) and then A (M x K) copied into a workspace with their {padded}, "
                             "read by the kernel as its operands")
    if not p.get("PB", 0):
        return None
    tiles = ceil_div(N, XPOSE_TILE) * ceil_div(K, XPOSE_TILE)
    return Prologue(Launch(grid=(tiles, 1, 1), block=(256, 1, 1)), floats=K * N,
                    does="B (stored N x K) transposed into a K x N workspace, read by the kernel as B")


def derive(p: Params) -> dict[str, int]:
    """Everything the template, the launch and the model compute from a valid config. SPLITK=1 and
    WAVE=0: the template's split-K and tail-split code (families splitk and tailsplit, which set
    them as parameters) stay out."""
    return {**derive_tiles(p), "SPLITK": 1, "WAVE": 0, "RED": 0}


def loads_per_thread(p: Params) -> tuple[int, int]:
    """LA, LB: a thread's float4 loads of the A and B tiles (threads > 0)."""
    t = threads(p)
    return (p["BM"] * p["BK"] // 4) // t, (p["BK"] * p["BN"] // 4) // t


def derive_tiles(p: Params) -> dict[str, int]:
    """What blocked and splitk share: the warp, lane and load layout of a block tile."""
    ln, (la, lb) = lanes_n(p), loads_per_thread(p)
    return {"WSUBN": p["WN"] // p["WNITER"], "LANES_N": ln, "LANES_M": WARP // ln, "WSUBM": wsubm(p),
            "WMITER": wmiter(p), "THREADS": threads(p), "LA": la, "LB": lb, "SMEM": shared_bytes(p), "CS_PAD": CS_PAD}


def _geometry(p: Params, M: int, N: int) -> Launch:
    tiles_m, tiles_n = ceil_div(M, p["BM"]), ceil_div(N, p["BN"])
    grid = (tiles_n, tiles_m, 1) if p["GM"] == 1 else (tiles_n * tiles_m, 1, 1)
    return Launch(grid=grid, block=(threads(p), 1, 1), shared_bytes=shared_bytes(p))


def _loads_even(p: Params) -> bool:
    t = threads(p)
    return t > 0 and (p["BM"] * p["BK"] // 4) % t == 0 and (p["BK"] * p["BN"] // 4) % t == 0


def _can_swap(p: Params) -> bool:
    return p["ASYNC"] == 0 and p["TN"] % 4 == 0


def _regroups(p: Params) -> bool:
    """RT=1 has an operand to regroup (A with TA=0, B with TB=1), loads through registers (ASYNC=0), and
    a whole number of groups per thread: 2 loads of A, 4 of B."""
    if p["RT"] == 0:
        return True
    tb = reads_b_transposed(p)
    if p["ASYNC"] == 1 or threads(p) == 0 or (p["TA"] == 1 and not tb):
        return False
    la, lb = loads_per_thread(p)
    return (p["TA"] == 1 or la % 2 == 0) and (not tb or lb % 4 == 0)


def accumulators(p: Params) -> int:
    """Outputs of C a thread holds: (WMITER*TM) x (WNITER*TN)."""
    return wmiter(p) * p["TM"] * p["WNITER"] * p["TN"]


def _copies_nn(p: Params) -> bool:
    """AL=1 and 2 copy operands stored as NN (TA=0, TB=0, so no PB)."""
    return p["AL"] == 0 or (p["TA"] == 0 and p["TB"] == 0)


def _copies_tight(p: Params) -> bool:
    """AL=1 and 2 copy tight operands (BLAS=0: no leading dimensions, no batches)."""
    return p["AL"] == 0 or p.get("BLAS", 0) == 0


def _aligns(p: Params) -> bool:
    """Both of AL's constraints (the fit's test before it sets AL)."""
    return _copies_nn(p) and _copies_tight(p)


def _prologue_fits(p: Params) -> bool:
    """PB=1 has a B stored N x K to transpose (TB=1) and a plain signature (BLAS=0: the prologue
    transposes a tight B, without a leading dimension or batches)."""
    return p["PB"] == 0 or (p.get("TB", 0) == 1 and p.get("BLAS", 0) == 0)


# PB=1 pays from this many rows of C on: transposing B moves 8*K*N bytes whatever M is, so its share
# of the time falls like 1/M. On the H200 at N = K = 4096 (docs/BENCHMARKS.md as of f793a29, "PB=0 against PB=1")
# PB=1 loses 2.9% at 256 and 512 rows and gains 1.1% at 1024 and 0.7% at 2048
PB_MIN_ROWS = 1024


# Copying A and B pays where their rows are not 16-byte aligned (K or N not a multiple of 4) from this many
# rows of C on: at 4097 x 4095 x 4093 on the H200 AL=1's copies and product took 3.03 ms against AL=0's 3.19
# (docs/BENCHMARKS.md as of f793a29, "the launch path's share, AL=1, small tiles"); the copies move A and B whatever M is,
# so below this they are not assumed. The default copies to whole tiles (AL=2), so that no block loads at
# an edge: 2.886 ms there against AL=1's 2.961 (docs/BENCHMARKS.md as of f793a29, "AL=2, operands padded to whole tiles").
AL_MIN_ROWS = 1024


def _fit(p: Params, shape: tuple[int, int, int], limits: Limits, keep: frozenset[str] = frozenset()) -> Params:
    """The default at a shape (none of `keep` changed: Fit): a smaller tile where K is short and the tiles would
    leave SMs idle (smaller_tile); no prologue below PB_MIN_ROWS rows of C; copies to whole tiles (AL=2) of NN operands whose rows are not 16-byte
    aligned, from AL_MIN_ROWS rows; C staged (CS=1) where its rows are not 16-byte aligned (_stages_c_where_it_pays)."""
    M, N, K = shape
    fit: dict[str, Value] = dict(smaller_tile(p, shape, limits, BLOCKED, keep))
    p = {**p, **fit}
    if p.get("PB", 0) and M < PB_MIN_ROWS:
        fit["PB"] = 0
    elif not p.get("AL", 0) and (K % 4 or N % 4) and M >= AL_MIN_ROWS and _aligns({**p, "AL": 2}):
        fit["AL"] = 2
    if _stages_c_where_it_pays(p, N, limits):
        fit["CS"] = 1
    return fit


def _stages_c_where_it_pays(p: Params, N: int, limits: Limits) -> bool:
    """CS=1 where C's rows are not whole 16-byte vectors, for a tile that can stage them. Without it the default
    tile took 0.96-2.4x the time at seven shapes of odd N on the H200 (1.3x their geometric mean; the least at
    16384x63x64, the most at 4096x1023x16: benchmarks/data/staged-store-h200.json). Only for values that
    have CS: tailsplit's fit is blocked's, on its own parameters, which leave CS out (chunked_params)."""
    return "CS" in p and N % 4 != 0 and not p["CS"] and BLOCKED.allows({**p, "CS": 1}, limits)


def _early(p: Params) -> int:
    """EARLY's default: 1 wherever it can be (2 stages or more)."""
    return int(p["STAGES"] >= 2)


def _stages_c_plainly(p: Params) -> bool:
    """CS=1's constraint (families that borrow blocked's constraints for their own params have no CS: 0)."""
    return not p.get("CS", 0) or (p["TN"] % 4 == 0 and p.get("BLAS", 0) == 0)


def _shape_values(shape: tuple[int, int, int]) -> dict[str, tuple[Value, ...]]:
    """Where C's rows are whole 16-byte vectors (N % 4 == 0) CS=1 runs CS=0's store, only with more shared memory
    at most: a search there walks CS=0 only. MA and MB likewise where neither of the lengths an operand's rows
    can have (A: K, or M stored transposed; B: N, or K) leaves them unaligned."""
    M, N, K = shape
    fixed: dict[str, tuple[Value, ...]] = {"CS": (0,)} if N % 4 == 0 else {}
    if M % 4 == 0 and K % 4 == 0:
        fixed["MA"] = (0,)
    if N % 4 == 0 and K % 4 == 0:
        fixed["MB"] = (0,)
    return fixed


def _reads_pairs_plainly(p: Params) -> bool:
    """MA=1 and MB=1 load through registers (ASYNC=0) from the operands as given (AL=0, PB=0)."""
    return not (p["MA"] or p["MB"]) or (p["ASYNC"] == 0 and p.get("AL", 0) == 0 and p.get("PB", 0) == 0)


def _rows_apart(p: Params) -> bool:
    t = threads(p)
    return t > 0 and t % (p["BK"] // 4) == 0 and t % (p["BN"] // 4) == 0


BLOCKED = Family(
    name="blocked",
    doc="register blocking: warp tiles of thread tiles, float4 loads, A transposed in shared memory",
    params=(
        # The defaults are the best config measured at 4096^3 on the H200 (docs/BENCHMARKS.md as of f793a29);
        # `autotune search` measures them first, then looks around them.
        Param("BM", (32, 64, 128, 256), 128, "rows of C per block"),
        Param("BN", (32, 64, 128, 256), 256, "columns of C per block"),
        Param("BK", (8, 16, 32), 16, "K step: the width of the A tile and height of the B tile"),
        Param("WM", (16, 32, 64, 128), 64, "rows of C per warp"),
        Param("WN", (16, 32, 64, 128), 64, "columns of C per warp"),
        Param("WNITER", (1, 2, 4), 2, "sub-tiles of a warp tile along N"),
        Param("TM", (1, 2, 4, 8), 8, "rows of a thread's block of outputs in one sub-tile"),
        Param("TN", (1, 2, 4, 8), 4, "columns of a thread's block of outputs in one sub-tile"),
        Param("STAGES", (1, 2, 3, 4), 2, "shared-memory stages (with ASYNC=0: 2 = double-buffered, register prefetch)"),
        Param("ASYNC", (0, 1), 0, "1: fill the stages with cp.async (global to shared, no registers)"),
        Param("pad", (0, 4), 4, "floats of padding per row of the transposed A tile, and of B's with TB=1 (bank conflicts)"),
        Param("GM", (1, 8), 1, "block-rows grouped together for L2 reuse (1 = plain row-major order)"),
        Param("MINB", (1, 2), 1, "__launch_bounds__ minimum resident blocks per SM (caps registers)"),
        Param("BSWAP", (0, 1), lambda p: int(_can_swap(p)),
              "1: B's columns swapped in pairs in shared memory (register banks of the FFMA operands)", absent=0),
        Param("TA", (0, 1), 0, "1: A is stored transposed, K x M row-major (A[m][k] at A[k*M + m])",
              absent=0, named_at_absent=False),
        Param("TB", (0, 1), 0, "1: B is stored transposed, N x K row-major (B[k][n] at B[n*K + k])",
              absent=0, named_at_absent=False),
        # PB's default: 1 wherever it can be (NT, TT), for large M; the fit takes it back to 0 below
        # PB_MIN_ROWS (_fit), where transposing B costs more than reading it transposed
        Param("PB", (0, 1), lambda p: int(_prologue_fits({**p, "PB": 1})),
              "1: B (stored N x K, TB=1) is first transposed into a K x N workspace by a kernel of its own, "
              "which the product then reads as an untransposed B", absent=0, named_at_absent=False),
        # RT's default: 1 for NT without PB only, where it is 1.3-2% faster at 4096^3 and 8192^3; NN and TT
        # kernels are slower with it (docs/BENCHMARKS.md as of f793a29, "Kept: RT=1")
        Param("RT", (0, 1), lambda p: int(p.get("TA") == 0 and reads_b_transposed(p) and _regroups({**p, "RT": 1})),
              "1: a thread loads an operand stored along K (A with TA=0, B with TB=1) in groups of rows at the "
              "same k (2 of A, 4 of B) and stores them transposed as float2s / float4s (not 4-byte stores)",
              absent=0, named_at_absent=False),
        Param("BLAS", (0, 1), 0, "1: cuBLAS-style arguments (lda, ldb, ldc, alpha, beta, batch strides; "
                                 "autotune/space/blas.py), batch = grid z", absent=0, named_at_absent=False),
        Param("AL", (0, 1, 2), 0, "1: A and B (NN) are first copied by a kernel of its own into a workspace with their "
              "rows padded to multiples of 4 floats, so the product's loads are 16-byte ones whatever K and N; 2: "
              "padded to whole tiles (rows and columns), so that besides no block of the product loads at an edge",
              absent=0, named_at_absent=False),
        # ORDER=3 with EARLY=1: 2.2-2.3% faster than ORDER=0 EARLY=0 at 4096^3 in NN and NT, within 0.2% in TN and
        # TT, 2% faster at 2048^3 (docs/BENCHMARKS.md as of f793a29, "blocked's default against ORDER=3 EARLY=1")
        Param("ORDER", (0, 1, 2, 3), 3, "the order of a thread's FMAs within a k-step: 0 row by row, 1 rows in "
              "serpentine (odd rows right to left), 2 column by column, 3 columns in serpentine; the same sums, "
              "another instruction order and register allocation from ptxas", absent=0, named_at_absent=False),
        Param("EARLY", (0, 1), _early, "1: the barrier in each tile's last k-step, so that the next tile's first "
              "fragments load while the last FMAs run (two sets of register fragments)", absent=0, named_at_absent=False),
        Param("CS", (0, 1), 0, "1: where C's rows are not whole 16-byte vectors (N % 4 != 0), each warp's sub-tiles "
              "of C go through shared memory and out a row at a time, consecutive lanes to consecutive columns",
              absent=0, named_at_absent=False),
        Param("MA", (0, 1), 0, "1: where A's rows are not whole 16-byte vectors, a thread's four values of a row are "
              "read as the one or two aligned float4s that hold them (0: four 4-byte loads)", absent=0,
              named_at_absent=False),
        Param("MB", (0, 1), 0, "1: the same for B's rows (skinny's MB)", absent=0, named_at_absent=False),
    ),
    constraints=(
        Constraint("warp tiles must tile the block tile (BM % WM == 0 and BN % WN == 0)", TILE, lambda p, _: tiles_fit(p)),
        Constraint("a warp's lanes must tile its warp tile: WN/WNITER/TN lanes along N must divide 32, "
                   "and WM must be a multiple of (32/lanes along N)*TM", LANES, lambda p, _: wmiter(p) > 0),
        Constraint("threads per block (BM/WM)*(BN/WN)*32 must not exceed the device limit (1024)", TILE,
                   lambda p, lim: threads(p) <= lim.max_threads_per_block),
        Constraint("threads must divide the float4 loads of the A and B tiles evenly", (*TILE, "BK"), lambda p, _: _loads_even(p)),
        Constraint(f"at most {MAX_ACCUMULATORS} accumulators per thread (WMITER*TM*WNITER*TN) to stay in registers",
                   LANES, lambda p, _: accumulators(p) <= MAX_ACCUMULATORS),
        Constraint("register-prefetch loading (ASYNC=0) has 1 or 2 stages; 3 and 4 need ASYNC=1", ("ASYNC", "STAGES"),
                   lambda p, _: p["ASYNC"] == 1 or p["STAGES"] <= 2),
        Constraint("cp.async loading (ASYNC=1) needs at least 2 stages", ("ASYNC", "STAGES"), lambda p, _: p["ASYNC"] == 0 or p["STAGES"] >= 2),
        Constraint("shared memory STAGES*BK*(BM+pad+BN)*4 bytes must fit the device's per-block limit",
                   ("STAGES", "BK", "BM", "pad", "BN"), lambda p, lim: shared_bytes(p) <= lim.max_shared_optin),
        Constraint("MINB blocks of this many threads must fit one SM (the device's threads per SM)", (*TILE, "MINB"),
                   lambda p, lim: p["MINB"] * threads(p) <= lim.max_threads_per_sm),
        Constraint("threads per block must be a multiple of BK/4 and of BN/4, so that a thread's float4 loads "
                   "of a tile lie whole rows apart", (*TILE, "BK"), lambda p, _: _rows_apart(p)),
        Constraint("BSWAP=1 needs ASYNC=0 (cp.async copies B's 16 bytes as they are) and TN a multiple of 4 "
                   "(B fragments read as float4)", ("BSWAP", "ASYNC", "TN"), lambda p, _: p["BSWAP"] == 0 or _can_swap(p)),
        Constraint("RT=1 needs ASYNC=0, an operand stored along K (TA=0 or TB=1), and whole groups of loads per "
                   "thread (BM*BK/4/threads even with TA=0, BN*BK/4/threads a multiple of 4 with TB=1)",
                   (*TILE, "BK", "RT", "ASYNC", "TA", "TB", "PB"), lambda p, _: _regroups(p)),
        Constraint("PB=1 needs TB=1 (a B stored N x K to transpose first) and BLAS=0 (its prologue transposes "
                   "a tight B: no leading dimension, no batches)", ("PB", "TB", "BLAS"), lambda p, _: _prologue_fits(p)),
        Constraint("EARLY=1 needs 2 or more stages (the next tile is written while this one is read)",
                   ("EARLY", "STAGES"), lambda p, _: p["EARLY"] == 0 or p["STAGES"] >= 2),
        Constraint("AL=1 or 2 needs TA=0 and TB=0 (its prologue copies A and B stored as NN)", ("AL", "TA", "TB"),
                   lambda p, _: _copies_nn(p)),
        Constraint("AL=1 or 2 needs BLAS=0 (its prologue copies tight A and B: no leading dimension, no batches)",
                   ("AL", "BLAS"), lambda p, _: _copies_tight(p)),
        Constraint("CS=1 needs TN a multiple of 4 (a lane's outputs go into shared memory as float4s) and BLAS=0 "
                   "(the staged store writes C as the plain signature does: no alpha, beta or ldc)",
                   ("CS", "TN", "BLAS"), lambda p, _: _stages_c_plainly(p)),
        Constraint("MA=1 and MB=1 need ASYNC=0 (cp.async copies 16 bytes from where they lie, and an unaligned row's "
                   "only 4), AL=0 (AL's copies are aligned already) and PB=0 (they read the operands as given)",
                   ("MA", "MB", "ASYNC", "AL", "PB"), lambda p, _: _reads_pairs_plainly(p)),
        Constraint("MA=1 and MB=1 need BLAS=0 (an operand's end is its rows times their length: no leading "
                   "dimension, no batches)", ("MA", "MB", "BLAS"), lambda p, _: not (p["MA"] or p["MB"]) or not p.get("BLAS", 0)),
        Constraint("CS=1's staging, (threads/32)*WSUBM*(WSUBN+4)*4 bytes, must fit the device's per-block limit",
                   ("CS", *TILE, *LANES), lambda p, lim: not p.get("CS", 0) or staging_bytes(p) <= lim.max_shared_optin),
    ),
    template="blocked.cu.j2",
    geometry=_geometry,
    derive=derive,
    tags={"WNITER": "WNI", "STAGES": "S", "ASYNC": "AS", "MINB": "LB", "BSWAP": "BSW", "ORDER": "OR", "EARLY": "EB"},
    prologue=_prologue,
    fit=_fit,
    shape_values=_shape_values,
    hip=WAVE32,
    intensity=lambda p: tile_intensity(p["BM"], p["BN"]),
    bank_model="warp-tiles",
    block_tile=lambda p: (p["BM"], p["BN"]),
)
