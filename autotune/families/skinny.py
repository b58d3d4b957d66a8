"""The skinny family: GEMV-like kernels for small M (16 x 8192 x 8192), where the time is reading B
once. A thread owns 4 consecutive columns of C for all MR rows of its block-row; it streams B with
16-byte loads (guarded scalar loads at the right edge or when N % 4 != 0) and reads A from a
shared-memory tile of MR x KT, whose values all threads read at one address (a broadcast). M > MR
runs ceil(M/MR) block-rows (each reads B again, mostly from L2 when the rows of a split are near
in time). With SPLITK > 1 the grid's z blocks divide K and add their partials into C in split
order behind the turnstiles of templates/_splitk.cu.j2, as the splitk family does: deterministic.
"""
from __future__ import annotations

from autotune.families.splitk import MAX_TILES, split_grid
from autotune.space import Constraint, Family, Param, Params, ceil_div

COLUMNS_PER_THREAD = 4  # one float4 of a row of B


def derive(p: Params) -> dict[str, int]:
    return {"KQ": p["KT"] // 4, "MAX_TILES": MAX_TILES}


def shared_bytes(p: Params) -> int:
    return p["MR"] * p["KT"] * 4


def tiles(p: Params, M: int, N: int) -> tuple[int, int]:
    return ceil_div(N, COLUMNS_PER_THREAD * p["THREADS"]), ceil_div(M, p["MR"])


_geometry, _shape_rules = split_grid(tiles, lambda p: f"{p['MR']}x{COLUMNS_PER_THREAD * p['THREADS']}",
                                     "use SPLITK=1 or larger MR")


SKINNY = Family(
    name="skinny",
    doc="few rows of C per block (small M): B streamed once with 16-byte loads, A broadcast from shared "
        "memory, K optionally split among blocks (added in split order, deterministic)",
    params=(
        # The defaults aim at 16 x 8192 x 8192: one block-row, 16 x 1 tiles x 32 splits = 512 blocks.
        Param("THREADS", (64, 128, 256, 512), 128, "threads per block; a block covers 4*THREADS columns of C"),
        Param("MR", (1, 2, 4, 8, 16), 16, "rows of C per block (each thread keeps MR x 4 accumulators)"),
        Param("KT", (16, 32, 64, 128, 256), 128, "columns of A staged in shared memory per tile"),
        Param("SPLITK", (1, 2, 4, 8, 16, 32, 64), 32, "blocks per tile of C, each over its own chunk of K"),
    ),
    constraints=(
        Constraint("static shared memory MR*KT*4 bytes must fit the 48 KiB static __shared__ limit", ("MR", "KT"),
                   lambda p, lim: shared_bytes(p) <= lim.max_static_shared),
        Constraint("a block's threads must not exceed the device limit (1024)", ("THREADS",),
                   lambda p, lim: p["THREADS"] <= lim.max_threads_per_block),
    ),
    template="skinny.cu.j2",
    geometry=_geometry,
    derive=derive,
    tags={"THREADS": "T", "SPLITK": "SK"},
    shape_rules=_shape_rules,
)
