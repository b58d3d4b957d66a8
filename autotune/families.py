"""The kernel families: their parameters, constraints (each with a reason) and launch geometry.

naive  one thread per output of C (seed chapter, sections 2-3).
       x_over=cols: threadIdx.x walks the columns of C, so a warp reads one row of B
       (coalesced) and broadcasts one A element. x_over=rows: threadIdx.x walks the rows,
       so a warp's A loads are K floats apart (uncoalesced).
       Block (bx, by); grid covers C with bx x by outputs per block.

tiled  the chapter's shared-memory kernel (sections 5-6), generalised. A block computes a
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

from typing import Any, Mapping

from .errors import SpaceError
from .space import Config, Constraint, Family, Launch, Limits, Param, Params, ceil_div, make_config

POW2_BLOCK = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
X_OVER = ("cols", "rows")
MAX_OUTPUTS_PER_THREAD = 64  # accumulators beyond this spill out of registers


def _threads_ok(p: Params, lim: Limits) -> bool:
    return p["bx"] * p["by"] <= lim.max_threads_per_block


THREADS = Constraint("threads per block bx*by must not exceed the device limit (1024)", _threads_ok)


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
)


def tiled_shared_bytes(p: Params) -> int:
    return 2 * p["T"] * (p["T"] + p["pad"]) * 4


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
        Constraint("bx must divide T (each thread owns T/bx columns of the tile)", lambda p, _: p["T"] % p["bx"] == 0),
        Constraint("by must divide T (each thread owns T/by rows of the tile)", lambda p, _: p["T"] % p["by"] == 0),
        Constraint(
            f"outputs per thread (T/bx)*(T/by) must be at most {MAX_OUTPUTS_PER_THREAD} to stay in registers",
            lambda p, _: (p["T"] // max(p["bx"], 1)) * (p["T"] // max(p["by"], 1)) <= MAX_OUTPUTS_PER_THREAD,
        ),
        Constraint(
            "static shared memory 2*T*(T+pad)*4 bytes must fit the 48 KiB static __shared__ limit",
            lambda p, lim: tiled_shared_bytes(p) <= lim.max_static_shared,
        ),
    ),
    template="tiled.cu.j2",
    geometry=_tiled_geometry,
    tags={"x_over": "x"},
)

from .blocked import BLOCKED  # noqa: E402 (it builds on the helpers above)

FAMILIES: dict[str, Family] = {f.name: f for f in (NAIVE, TILED, BLOCKED)}


def config_of_row(row: Mapping[str, Any]) -> Config:
    """The config a stored result row was measured for. A parameter added after the row was
    written (no column, or NULL) takes the value the kernels had before it (`Param.absent`)."""
    family = FAMILIES[row["family"]]
    values = {}
    for p in family.params:
        value = row.get(p.name)
        if value is None and p.absent is None:
            raise SpaceError(f"result {row.get('id')} ({row.get('kernel')}) has no value for {p.name}")
        values[p.name] = p.absent if value is None else value
    return make_config(family, values)
