"""The tiled family: the chapter's shared-memory kernel (sections 5-6), generalised. A block computes a
T x T tile of C with bx x by threads; bx and by divide T, and each thread computes
(T/bx)*(T/by) outputs spaced bx columns and by rows apart (x_over=cols), so that a
warp still lies along a row of the tile. bx = by = T is exactly the chapter's kernel.
x_over=rows swaps the roles: threadIdx.x walks the tile's rows, so a warp reads a
column of As (bank conflicts unless padded) and stores a column of C.
Loading the tiles does not depend on x_over: consecutive threads always load
consecutive floats of a row, so global loads stay coalesced.
pad: floats of padding at the end of each shared-array row.
"""
from __future__ import annotations

from autotune.families.common import POW2_BLOCK, THREADS, X_OVER
from autotune.space import Constraint, Family, HipSupport, Launch, Param, Params, ceil_div

MAX_OUTPUTS_PER_THREAD = 64  # accumulators beyond this spill out of registers


def tiled_shared_bytes(p: Params) -> int:
    return 2 * p["T"] * (p["T"] + p["pad"]) * 4


def derive(p: Params) -> dict[str, int]:
    """The outputs a thread computes: RM rows by RN columns of the tile."""
    across, down = (p["bx"], p["by"]) if p["x_over"] == "cols" else (p["by"], p["bx"])
    return {"RM": p["T"] // down, "RN": p["T"] // across}


def _tiled_geometry(p: Params, M: int, N: int) -> Launch:
    T = p["T"]
    return Launch(grid=(ceil_div(N, T), ceil_div(M, T), 1), block=(p["bx"], p["by"], 1))


TILED = Family(
    name="tiled",
    doc="shared-memory tiles of T x T; each of bx x by threads computes (T/bx)*(T/by) outputs",
    params=(
        Param("T", (4, 8, 16, 32, 64), 32, "tile edge: the block computes a T x T tile of C"),
        Param("bx", POW2_BLOCK[:7], lambda p: p.get("T", 32), "threads in x (divides T; default T)"),
        Param("by", POW2_BLOCK[:7], lambda p: p.get("T", 32), "threads in y (divides T; default T)"),
        Param("x_over", X_OVER, "cols", "which dimension of the tile threadIdx.x walks"),
        Param("pad", (0, 1, 2, 4), 0, "floats of padding per shared-array row"),
    ),
    constraints=(
        THREADS,
        Constraint("bx must divide T (each thread owns T/bx columns of the tile)", ("T", "bx"), lambda p, _: p["T"] % p["bx"] == 0),
        Constraint("by must divide T (each thread owns T/by rows of the tile)", ("T", "by"), lambda p, _: p["T"] % p["by"] == 0),
        Constraint(
            f"outputs per thread (T/bx)*(T/by) must be at most {MAX_OUTPUTS_PER_THREAD} to stay in registers",
            ("T", "bx", "by"),
            lambda p, _: (p["T"] // max(p["bx"], 1)) * (p["T"] // max(p["by"], 1)) <= MAX_OUTPUTS_PER_THREAD,
        ),
        Constraint(
            "static shared memory 2*T*(T+pad)*4 bytes must fit the 48 KiB static __shared__ limit",
            ("T", "pad"),
            lambda p, lim: tiled_shared_bytes(p) <= lim.max_static_shared,
        ),
    ),
    template="tiled.cu.j2",
    geometry=_tiled_geometry,
    derive=derive,
    tags={"x_over": "x"},
    hip=HipSupport(wave32=None),
    intensity=lambda p: p["T"] / 4,  # per tile step 2*T*T floats in, 2*T*T*T FLOP
    bank_model="tiles",
    block_tile=lambda p: (p["T"], p["T"]),
    static_shared=tiled_shared_bytes,
)
