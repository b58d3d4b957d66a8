"""Write the shapes the shipped database covers host-bound calls with (api.dispatch: a row measured at
a shape that holds a call's, in at most HOST_BOUND_MS, covers it): on a grid of powers of 4 from 16 to
16384 for M, N and K, the largest shapes whose product a crude estimate puts within a few microseconds
on an H200 (bytes at 3.5 TB/s or FLOPs at 35 TFLOP/s, whichever is longer, plus 2 us), keeping only
those no other kept shape holds. What the search then finds there decides which of them cover anything:
a row longer than HOST_BOUND_MS covers nothing.

    python scripts/host_bound_shapes.py > benchmarks/host-bound-shapes.toml
    python scripts/host_bound_shapes.py --misaligned > benchmarks/host-bound-misaligned-shapes.toml

--misaligned writes the same shapes with N, K or both one less: a covering row counts only for calls whose
rows are aligned as its own are (api.dispatch.stored_rows_aligned), and odd widths are most of the shapes
a user calls. --odd-n writes those of them whose N is one less, where C's rows are misaligned (blocked's CS=1
changes their stores, and only theirs):

    python scripts/host_bound_shapes.py --odd-n > benchmarks/host-bound-odd-n-shapes.toml

--small writes a finer lattice (powers of 2 from 8, within 6 us by the same estimate), misaligned as --misaligned
does: corners small enough that a kernel reading rows a float at a time may still run there in a few
microseconds, where it hides behind the host time of our call. Of the 30 shapes of anyshape.py's three random
draws (seeds 1-3) where torch.matmul took under 17 us a call, aligned alike, these corners hold 14; the rows
that cover today (within 11 us, beating cuBLAS; these corners' winners shipped among them) hold 14: 2 before
these corners were shipped, 8 before the long-K, tall and wide ones:

    python scripts/host_bound_shapes.py --small > benchmarks/host-bound-small-shapes.toml

--long-k writes smaller corners of K LONG_K (splitk's) or more, aligned and misaligned (the lattice within
LONG_K_BUDGET_US by the same estimate): at --small's there the first pass's kernels took 13-22 us on the H200 and
splitk's small tiles 11.6-23.0 on an H100, covering none, while at corners half as large those tiles took 9.3-10.3
us, beating cuBLAS (benchmarks/small_corners.py, SPLIT_TILES). They are measured with those tiles
(small_corners.py --families splitk):

    python scripts/host_bound_shapes.py --long-k > benchmarks/host-bound-long-k-shapes.toml

--tall writes corners of few columns and many rows (N of 16 or 8, M of 1024 or more; TALL_NS, TALL_BUDGETS_US),
aligned and misaligned: GEMV-like products of A by a few columns, which tall's small tiles (small_corners.py
--families tall, TALL_TILES) ran in 10.3-12.4 us on an H100 at four such shapes, where cuBLAS took 10.8-17.1
(benchmarks/data/tall-short-k-h100.sqlite.gz):

    python scripts/host_bound_shapes.py --tall > benchmarks/host-bound-tall-shapes.toml

--wide writes their mirror: corners of few rows and many columns (M of 8 or 16, N of 1024 or more; WIDE_MS), aligned
and misaligned, for skinny (small_corners.py --families skinny), on a finer grid (steps of 1.5x and 2x: WIDE_SIDES)
at a larger budget (WIDE_BUDGET_US): skinny's time there is reading B once, so a corner of twice the call's B costs
twice its time, and on the H200 its rows took 8.8-10.7 us at 16x16384x25x (the shipped database), where the
estimate says 6.8. That database held no row within 11 us of fewer than 16 rows, so calls of a few rows, a few
thousand columns and K in the hundreds (1x6634x672, 8x3144x591) ran cuBLAS, host-bound, the pass-through at
0.94-0.96x torch.matmul (anyshape seeds 2 and 3):

    python scripts/host_bound_shapes.py --wide > benchmarks/host-bound-wide-shapes.toml

--shallow writes corners of short K (8, 32 and 64: SHALLOW_KS) and M and N of 128 or more on the same finer grid,
at two budgets (SHALLOW_BUDGETS_US), aligned and misaligned, for blocked's small tiles (small_corners.py --families
blocked): there the time is writing C. After the long-K, tall and wide corners were shipped on the H200, the calls
that still ran cuBLAS below 0.95x torch.matmul at anyshape's seeds 7 and 10 were mostly of K under 50 with C of a
few million floats (4828x618x4, 2727x1193x3, 8139x213x6), which no corner of --small held (it stops at 6 us):

    python scripts/host_bound_shapes.py --shallow > benchmarks/host-bound-shallow-shapes.toml
"""
from __future__ import annotations

import itertools
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from autotune.families.splitk import LONG_K  # noqa: E402

SIDES = [16, 64, 256, 1024, 4096, 16384]
BUDGET_US = 8.0


def estimate_us(M: int, N: int, K: int) -> float:
    moved = 4 * (M * K + K * N + M * N)
    return max(moved / 3.5e12, 2 * M * N * K / 35e12) * 1e6 + 2


SMALL_SIDES = [2 ** p for p in range(3, 15)]
SMALL_BUDGET_US = 6.0
LONG_K_BUDGET_US = 5.0
# --tall: N of at most one tall block's 16 columns and M of 1024 or more, at two budgets (each lattice's largest
# shapes): at 16384x16x256 (7.1 us by the estimate) tall took 10.3 us on an H100, within HOST_BOUND_MS
TALL_NS = [8, 16]
TALL_MIN_M = 1024
TALL_BUDGETS_US = (5.0, 7.5)
# --wide: the tall lattice's mirror, rows for columns (skinny's MR of 8 and 16 rows)
WIDE_MS = [8, 16]
WIDE_MIN_N = 1024
WIDE_SIDES = sorted({*SMALL_SIDES, *(3 * 2 ** p for p in range(2, 13))})
WIDE_BUDGET_US = 10.0
# --shallow: K of at most 64 (calls of K 3-44 ran cuBLAS), M and N from SHALLOW_MIN_SIDE
SHALLOW_KS = [8, 32, 64]
SHALLOW_MIN_SIDE = 128
SHALLOW_BUDGETS_US = (8.0, 10.0)


def shapes(sides: list[int] = SIDES, budget_us: float = BUDGET_US, ns: list[int] | None = None,
           ms: list[int] | None = None, ks: list[int] | None = None) -> list[tuple[int, int, int]]:
    """The largest shapes of the grid (M from ms, N from ns, K from ks where given) within the budget by the estimate."""
    kept = [s for s in itertools.product(ms or sides, ns or sides, ks or sides) if estimate_us(*s) <= budget_us]
    return sorted(s for s in kept if not any(t != s and all(a >= b for a, b in zip(t, s)) for t in kept))


def misaligned(kept: list[tuple[int, int, int]], odd_n: bool = False) -> list[tuple[int, int, int]]:
    """Each shape with N, K or both one less: B's and C's rows (N floats) and A's (K) of another alignment;
    odd_n: only those with N one less."""
    steps = ((1, 0), (1, 1)) if odd_n else ((1, 0), (0, 1), (1, 1))
    return [(M, N - dn, K - dk) for M, N, K in kept for dn, dk in steps]


def written(flag: str) -> list[tuple[int, int, int]]:
    if flag == "--small":
        return misaligned(shapes(SMALL_SIDES, SMALL_BUDGET_US))
    if flag == "--long-k":
        kept = shapes(SMALL_SIDES, LONG_K_BUDGET_US)
        return [s for s in [*kept, *misaligned(kept)] if s[2] >= LONG_K]
    if flag == "--tall":
        kept = sorted(s for budget in TALL_BUDGETS_US for s in shapes(SMALL_SIDES, budget, TALL_NS) if s[0] >= TALL_MIN_M)
        return [*kept, *misaligned(kept)]
    if flag == "--wide":
        # each M a lattice of its own: a corner of 16 rows would hold 8 rows' corners (the estimate is B's bytes), yet
        # skinny's MR=16 carries twice MR=8's accumulators, and an 8-row call takes the smallest covering row's kernel
        kept = sorted(s for M in WIDE_MS for s in shapes(WIDE_SIDES, WIDE_BUDGET_US, ms=[M]) if s[1] >= WIDE_MIN_N)
        return [*kept, *misaligned(kept)]
    if flag == "--shallow":
        sides = [side for side in WIDE_SIDES if side >= SHALLOW_MIN_SIDE]
        kept = sorted({s for budget in SHALLOW_BUDGETS_US for s in shapes(sides, budget, ks=SHALLOW_KS)})
        return [*kept, *misaligned(kept)]
    return misaligned(shapes(), flag == "--odd-n") if flag else shapes()


FLAGS = ("--misaligned", "--odd-n", "--small", "--long-k", "--tall", "--wide", "--shallow")


if __name__ == "__main__":
    if len(sys.argv) > 2 or sys.argv[1:] and sys.argv[1] not in FLAGS:
        print(f"host_bound_shapes.py: {' '.join(sys.argv[1:])!r}: give at most one of {', '.join(FLAGS)}", file=sys.stderr)
        sys.exit(2)
    flag = sys.argv[1] if len(sys.argv) > 1 else ""
    group = f"host-bound-{flag[2:]}" if flag else "host-bound"  # --tall: host-bound-tall
    print(f"# written by scripts/host_bound_shapes.py{' ' + flag if flag else ''}: the shapes whose rows cover "
          f"host-bound calls")
    print("shapes = [")
    for M, N, K in written(flag):
        print(f'  {{ group = "{group}", M = {M}, N = {N}, K = {K} }},')
    print("]")
