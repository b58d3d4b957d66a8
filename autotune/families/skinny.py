"""The skinny family: GEMV-like kernels for small M (16 x 8192 x 8192), where the time is reading B
once. A thread owns 4 consecutive columns of C for all MR rows of its block-row; it streams B with
16-byte loads (guarded scalar loads at the right edge or when N % 4 != 0) and reads A from a
shared-memory tile of MR x KT, whose values all threads read at one address (a broadcast). M > MR
runs ceil(M/MR) block-rows (each reads B again, mostly from L2 when the rows of a split are near
in time). With SPLITK > 1 the grid's z blocks divide K and add their partials into C in split
order behind the turnstiles of templates/_splitk.cu.j2, as the splitk family does: deterministic.
With RED=1 (KW > 1) each split writes its sum into its own slot of a workspace instead, and the tile's
last split to arrive adds the slots in split order: the same sum in the same order, without the chain
of splits each waiting for the one before (which all finish together when they are resident at once).

With KW > 1 a block is KW slices of THREADS column-threads: the block's rows of K are dealt to the
slices in contiguous runs of whole pieces of KT rows, each slice reads A straight from global memory (one address per warp:
a broadcast) so its loop has no barrier and keeps 4*AH loads of B in flight, and at the end the
slices' partials are added in slice order through shared memory, RG rows of C at a time. Many
threads on one tile of C replace many blocks on it, so SPLITK (a serial chain of turnstiles) stays
small. KW = 1 is one slice reading A from a shared-memory tile (no sum between slices). SA = 1 (one warp per slice) copies the rows
of A each piece needs into shared memory with cp.async a piece ahead instead: every block reads all
of A's rows from L2, and loaded in the FMAs' path they stall them for L2's latency. SB = 1 sends B
through shared memory as well: each lane copies its own rows of B AH groups ahead into a ring there
and reads back only what it copied (no meeting of lanes), so the bytes in flight cost no registers
(at MR=16 a ring in registers takes 137 registers a thread: one 256-thread block an SM). SB = 1
is the default wherever SA = 1 is.
A search first measures the default with MR cut to the rows there are (fit: MR=1 at M=1), then the
default.
"""
from __future__ import annotations

from dataclasses import replace

from autotune.families.splitk import MAX_TILES, WS_FLOATS, fit_block, split_grid, workspace_rule
from autotune.space import Constraint, Family, HipSupport, Launch, Limits, Param, Params, ceil_div, keeps

COLUMNS_PER_THREAD = 4  # one float4 of a row of B
ROWS_PER_BLOCK = (1, 2, 4, 8, 16)  # MR
# SPLITK: powers of two. Other counts (3, 5, 6, 7; 9 of 2-warp blocks, to fill the SMs' warp slots) were no
# faster at 16 rows on the H200 (docs/BENCHMARKS.md as of f793a29, "evener blocks, set aside" and "nine splits of two-warp blocks")
SPLITS = (1, 2, 4, 8, 16, 32, 64)
# From this many splits on the fit sums them through the workspace (RED=1). With 8 slices (and any KW but 16):
# on the H200 at 16 rows the workspace takes 0.065 ms against the chain's 0.075 with 8 splits (16x4096x14336)
# and 0.073-0.074 against 0.075 with 4 (16x8192x8192); with 2 the chain is 3-4% faster at 16 rows and level at
# 8 and 1 (docs/BENCHMARKS.md as of f793a29, "split-K sums through a workspace at 16 rows").
RED_FROM = 4
# With 16 slices the workspace wins at 2 splits too: 0.069-0.070 ms against 0.072 at 16x8192x8192, 0.064-0.065
# against 0.066 at 1x8192x8192 (docs/BENCHMARKS.md as of f793a29, "16 slices at every M <= 16 shape").
RED_FROM_16_SLICES = 2
SUM_FLOAT4S = 2048  # KW > 1: the in-block sum's buffer, in float4s (32 KiB): RG rows of KW*THREADS


def ahead(p: Params) -> int:
    """AH's `absent` value (a config without AH in its name has this depth) and KW = 1's only value: 3
    at MR=16 and 2 below (the best depths with A loaded from global memory)."""
    return 3 if p["MR"] == 16 else 2


def default_ahead(p: Params) -> int:
    """AH's default: 2 for KW > 1. With SA=1 two groups beat one and three at MR=16 (0.090 ms against 0.094
    and 0.119 at 16x8192x8192: three groups cost occupancy) and matched three at MR=8 (docs/BENCHMARKS.md as of f793a29,
    "skinny M at 16 rows, A off the FMAs' path")."""
    return ahead(p) if p["KW"] == 1 else 2


def default_staged(p: Params) -> int:
    """SA's default: 1 wherever it can run (a warp per slice, the buffers within the 48 KiB), since A read
    from global memory in the FMAs' path is what holds the loop back (docs/BENCHMARKS.md as of f793a29, "skinny M at 16 rows,
    A off the FMAs' path")."""
    return int(p["KW"] > 1 and p["THREADS"] == 32 and staged_floats({**p, "SA": 1}) * 4 <= Limits().max_static_shared)


def default_ring(p: Params) -> int:
    """SB's default: 1 wherever SA is 1 and the rings fit, since at 16 rows the register ring costs a block an
    SM (0.080 ms against 0.090 at 16x8192x8192) and at 8 and 1 rows it is no slower (docs/BENCHMARKS.md as of f793a29,
    "B through shared memory at 16 rows, the tall family's stages")."""
    return int(p["SA"] == 1 and shared_bytes({**p, "SB": 1}) <= Limits().max_shared_optin)


def sum_rows(p: Params) -> int:
    """RG: rows of C summed through shared memory at a time (a power of two, so it divides MR)."""
    return max(1, min(p["MR"], SUM_FLOAT4S // (p["THREADS"] * p["KW"])))


def staged_floats(p: Params) -> int:
    """SA = 1: each slice's two buffers of A, MR x KT floats each."""
    return p["KW"] * 2 * p["MR"] * p["KT"] if p.get("SA") else 0


def ring_bytes(p: Params) -> int:
    """SB = 1: each lane's ring of AH groups of four float4s of B."""
    return p["KW"] * p["THREADS"] * p["AH"] * 4 * 16 if p.get("SB") else 0


def derive(p: Params) -> dict[str, int]:
    return {"KQ": p["KT"] // 4, "MAX_TILES": MAX_TILES, "WS_FLOATS": WS_FLOATS, "RG": sum_rows(p), "AH_BEFORE": ahead(p),
            "SMEM4": shared_bytes(p) // 16, "SMEM": shared_bytes(p), "A4": staged_floats(p) // 4}


def sum_bytes(p: Params) -> int:
    """KW > 1: the in-block sum's buffer, RG rows of every slice's partials."""
    return p["KW"] * sum_rows(p) * p["THREADS"] * 16


def shared_bytes(p: Params) -> int:
    """Shared memory (dynamic with SB = 1, else static). KW > 1: the in-block sum, and with SA = 1 the
    buffers of A, with SB = 1 the rings of B after them (they take turns in one array: the buffers and
    rings in the main loop, the sum after it)."""
    if p["KW"] > 1:
        return max(sum_bytes(p), staged_floats(p) * 4 + ring_bytes(p))
    return p["MR"] * p["KT"] * 4


def tiles(p: Params, M: int, N: int) -> tuple[int, int]:
    return ceil_div(N, COLUMNS_PER_THREAD * p["THREADS"]), ceil_div(M, p["MR"])


def usable_splits(p: Params, K: int) -> list[int]:
    """At most as many splits as give each slice of a block one piece of K."""
    return [s for s in SPLITS if s == 1 or s * p["KW"] * p["KT"] <= K]


def fit(p: Params, shape: tuple[int, int, int], limits: Limits, keep: frozenset[str] = frozenset()) -> Params:
    """The default fitted to a shape (none of `keep` changed: Fit). MR: the rows there are (M = 1: MR = 1), and
    with SA=1 up to 16 rows in one block-row, so that B is read once (16x8192x8192: MR=16 0.090 ms against two block-rows of 8,
    0.117). SPLITK: the fewest splits whose blocks reach 1.5 per SM; at the 16-row shapes measured that was
    the fastest split (16 rows: 4 at N=8192, 2 at N=14336, 8 at N=4096, K = 8192, 4096, 14336). Then, where
    that takes two splits or more, 16 slices and half the splits: the same warps in half as many blocks, and
    half the partial sums, 1-3.5% faster than 8 slices at six of the seven M <= 16 shapes measured on the
    H200 (docs/BENCHMARKS.md as of f793a29, "16 slices at every M <= 16 shape"). RED=1 from RED_FROM (RED_FROM_16_SLICES)
    splits on, where the workspace holds the sums."""
    M, N, K = shape
    q = {**p, **fit_block(p, "MR", ROWS_PER_BLOCK, M, keep)}
    if "MR" not in keep and p["SA"] and q["MR"] < M:
        grown = {**q, "MR": min(v for v in ROWS_PER_BLOCK if v >= min(M, ROWS_PER_BLOCK[-1]))}
        q = grown if staged_floats(grown) * 4 <= limits.max_static_shared else q
    tiles_n, tiles_m = tiles(q, M, N)
    usable = usable_splits(q, K)
    # where even the most splits leave SMs without a block (few columns, a long K: 1 x 689 x 7472 had 6 column
    # blocks and 16 splits, 96 blocks, 19.9 us against cuBLAS's 9.6, benchmarks/data/anyshape-covered-h200.json at
    # 2b04d0b), half the slices a block where that allows twice the splits: the same warps over more SMs
    while "KW" not in keep and q["KW"] > 2 and tiles_n * tiles_m * usable[-1] < limits.sms:
        halved = {**q, "KW": q["KW"] // 2}
        more = usable_splits(halved, K)
        if more[-1] < 2 * usable[-1] or not SKINNY.allows(halved, limits):
            break
        q, usable = halved, more
    if "SPLITK" not in keep:  # counted in 8-slice blocks: a block of 16 slices (a caller's KW=16) holds two
        per_block = 2 if q["KW"] == 16 else 1
        q["SPLITK"] = next((s for s in usable if tiles_n * tiles_m * s * per_block * 2 >= 3 * limits.sms), usable[-1])
    wide = {**q, "KW": 16, "SPLITK": q["SPLITK"] // 2}
    if keeps(keep, q, wide) and q["KW"] == 8 and q["SPLITK"] > 1 and SKINNY.allows(wide, limits):
        q = wide
    red_from = RED_FROM_16_SLICES if q["KW"] == 16 else RED_FROM
    if "RED" not in keep and q["SPLITK"] >= red_from and q["KW"] > 1 and slots(q, M, N) <= WS_FLOATS:
        q["RED"] = 1
    return {k: v for k, v in q.items() if v != p[k]}


_split_geometry, _turnstile_rules = split_grid(tiles, lambda p: f"{p['MR']}x{COLUMNS_PER_THREAD * p['THREADS']}",
                                               "use SPLITK=1 or larger MR")


def slots(p: Params, M: int, N: int) -> int:
    """RED=1: floats of the splits' sums kept in the workspace, tiles x SPLITK x MR x 4*THREADS."""
    tiles_n, tiles_m = tiles(p, M, N)
    return tiles_n * tiles_m * p["SPLITK"] * p["MR"] * COLUMNS_PER_THREAD * p["THREADS"]


def _shape_rules(p: Params, M: int, N: int) -> list[str]:
    # MB=1 reads B as MB=0 does where its rows are whole 16-byte vectors: a trial of it there measures MB=0 again
    aligned = ["MB=1 changes nothing where N % 4 == 0 (B's rows are whole 16-byte vectors)"] if p["MB"] and N % 4 == 0 else []
    return _turnstile_rules(p, M, N) + workspace_rule(p["RED"], slots(p, M, N),
                                                      "the splits' sums (tiles x SPLITK x MR x 4*THREADS)") + aligned


def _geometry(p: Params, M: int, N: int) -> Launch:
    launch = _split_geometry(p, M, N)
    return replace(launch, block=(p["THREADS"] * p["KW"], 1, 1), shared_bytes=shared_bytes(p) if p["SB"] else 0)


SKINNY = Family(
    name="skinny",
    doc="few rows of C per block (small M): B streamed once with 16-byte loads, A broadcast from shared "
        "memory (KW = 1) or global memory (KW slices per block, summed in slice order), K optionally split "
        "among blocks (added in split order, deterministic)",
    params=(
        # The defaults: 8 slices of one warp (SA=1), 4 splits, pieces of 32 rows; 8 x 8192 x 8192 on the H200
        # runs them in 0.073 ms (77% of HBM). The fit takes MR to the rows there are (up to 16: B read once)
        # and SPLITK to what fills the SMs (where that splits, KW to 16 with half the splits). SPLITK stays
        # small: the splits' turnstiles are a serial chain (32 splits: 0.23 ms at 16 x 8192 x 8192). KT=32 is
        # the deepest piece at which MR=16's buffers of A fit 48 KiB with 8 slices.
        Param("THREADS", (32, 64, 128, 256, 512), 32,
              "column-threads per block (per slice with KW > 1); a block covers 4*THREADS columns of C"),
        Param("MR", ROWS_PER_BLOCK, 8, "rows of C per block (each thread keeps MR x 4 accumulators)"),
        Param("KT", (16, 32, 64, 128, 256), 32,
              "KW = 1: columns of A staged in shared memory per tile; KW > 1: rows of K per piece dealt to a slice"),
        Param("SPLITK", SPLITS, 4, "blocks per tile of C, each over its own chunk of K"),
        Param("KW", (1, 2, 4, 8, 16), 8, "slices of THREADS threads per block, each over its own pieces of the "
              "block's K (1: one slice, A staged in shared memory)", absent=1, named_at_absent=False),
        Param("AH", (1, 2, 3), default_ahead, "KW > 1: groups of four rows of B each thread keeps in flight (registers: "
              "16 per group)", absent=ahead, named_at_absent=False),
        Param("SA", (0, 1), default_staged, "KW > 1: 1 = each slice copies the rows of A its next piece needs into shared memory "
              "(cp.async) while it multiplies the current piece; 0 = A read from global memory in the FMAs' path",
              absent=0, named_at_absent=False),
        Param("SB", (0, 1), default_ring, "SA = 1: 1 = B goes through shared memory too: each lane copies its own float4s of AH groups "
              "ahead into a ring there (cp.async), so the loads in flight cost no registers; 0 = the ring in registers",
              absent=0, named_at_absent=False),
        Param("RED", (0, 1), 0, "SPLITK > 1, KW > 1: 0 = the splits of a tile add into C one after another (turnstiles); "
              "1 = each writes its sum to a workspace slot, the last to arrive adds them in split order",
              absent=0, named_at_absent=False),
        Param("MB", (0, 1), 0, "where B's rows are not whole 16-byte vectors (N % 4 != 0), read through registers (SB=0): "
              "1 = each lane's four values as the one or two aligned float4s that hold them (two 16-byte loads, the "
              "second mostly from L1); 0 = four 4-byte loads", absent=0, named_at_absent=False),
    ),
    constraints=(
        Constraint("static shared memory MR*KT*4 bytes must fit the 48 KiB static __shared__ limit", ("MR", "KT", "KW"),
                   lambda p, lim: p["KW"] > 1 or shared_bytes(p) <= lim.max_static_shared),
        Constraint("the in-block sum's KW*RG*THREADS*16 bytes of static shared memory must fit the 48 KiB limit",
                   ("MR", "THREADS", "KW"), lambda p, lim: p["KW"] == 1 or sum_bytes(p) <= lim.max_static_shared),
        Constraint("a block's threads THREADS*KW must not exceed the device limit (1024)", ("THREADS", "KW"),
                   lambda p, lim: p["THREADS"] * p["KW"] <= lim.max_threads_per_block),
        Constraint("AH and SA shape the KW > 1 loop only: with KW = 1 they keep their defaults", ("KW", "MR", "AH", "SA"),
                   lambda p, lim: p["KW"] > 1 or (p["AH"] == ahead(p) and p["SA"] == 0)),
        Constraint("SA=1 needs THREADS=32: a slice is one warp, whose lanes share each copied piece of A at __syncwarp",
                   ("THREADS", "SA"), lambda p, lim: p["SA"] == 0 or p["THREADS"] == 32),
        Constraint("SA=1, SB=0: the buffers of A, KW*2*MR*KT*4 bytes of static shared memory, must fit the 48 KiB limit",
                   ("MR", "KT", "KW", "SA", "SB"), lambda p, lim: p["SB"] == 1 or staged_floats(p) * 4 <= lim.max_static_shared),
        Constraint("SB=1 needs SA=1: B's ring shares the cp.async groups that bring A's pieces", ("SA", "SB"),
                   lambda p, lim: p["SB"] == 0 or p["SA"] == 1),
        Constraint("SB=1: the buffers of A and the rings of B, KW*(2*MR*KT*4 + THREADS*AH*64) bytes of dynamic shared "
                   "memory, must fit the device's per-block limit", ("MR", "KT", "KW", "THREADS", "AH", "SB"),
                   lambda p, lim: p["SB"] == 0 or shared_bytes(p) <= lim.max_shared_optin),
        Constraint("MB=1 reads B's rows into registers: with SB=1 B's ring copies them with cp.async instead", ("SB", "MB"),
                   lambda p, lim: p["MB"] == 0 or p["SB"] == 0),
        Constraint("RED=1 needs SPLITK > 1 (splits to sum) and KW > 1 (the sum through the slots is written for the "
                   "sliced kernel)", ("RED", "SPLITK", "KW"), lambda p, lim: p["RED"] == 0 or (p["SPLITK"] > 1 and p["KW"] > 1)),
    ),
    template="skinny.cu.j2",
    geometry=_geometry,
    derive=derive,
    tags={"THREADS": "T", "SPLITK": "SK", "RED": "RD"},
    shape_rules=_shape_rules,
    fit=fit,
    hip=HipSupport(wave32=None, no_cp_async="SA=0 -p SB=0 (A and B are read from global memory)"),
    intensity=lambda p: p["MR"] / 2,  # per k: a float4 of B (16 bytes) for 4*MR FMAs (A is MR floats beside it)
    block_tile=lambda p: (p["MR"], COLUMNS_PER_THREAD * p["THREADS"]),
)
