"""The naive family: one thread per output of C (seed chapter, sections 2-3).
x_over=cols: threadIdx.x walks the columns of C, so a warp reads one row of B
(coalesced) and broadcasts one A element. x_over=rows: threadIdx.x walks the rows,
so a warp's A loads are K floats apart (uncoalesced).
Block (bx, by); grid covers C with bx x by outputs per block.
"""
from __future__ import annotations

from autotune.families.common import POW2_BLOCK, THREADS, X_OVER
from autotune.space import Family, HipSupport, Launch, Param, Params, ceil_div


def _naive_geometry(p: Params, M: int, N: int) -> Launch:
    bx, by = p["bx"], p["by"]
    if p["x_over"] == "cols":
        grid = (ceil_div(N, bx), ceil_div(M, by), 1)
    else:
        grid = (ceil_div(M, bx), ceil_div(N, by), 1)
    return Launch(grid=grid, block=(bx, by, 1))


NAIVE = Family(
    name="naive",
    doc="one thread per output; x_over decides which way the warp lies",
    params=(
        Param("x_over", X_OVER, "cols", "which dimension of C threadIdx.x walks"),
        Param("bx", POW2_BLOCK, 32, "threads per block in x"),
        Param("by", POW2_BLOCK, 8, "threads per block in y"),
    ),
    constraints=(THREADS,),
    template="naive.cu.j2",
    geometry=_naive_geometry,
    tags={"x_over": "x"},
    hip=HipSupport(wave32=None),
    intensity=lambda p: 0.25,  # per FMA one float of A and one of B (8 bytes) for 2 FLOP
    in_suites=False,
    # x_over says which of C's dimensions threadIdx.x walks
    block_tile=lambda p: (p["by"], p["bx"]) if p["x_over"] == "cols" else (p["bx"], p["by"]),
)
