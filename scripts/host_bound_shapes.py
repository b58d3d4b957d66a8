"""Write the shapes the shipped database covers host-bound calls with (api.dispatch: a row measured at
a shape that holds a call's, in at most HOST_BOUND_MS, covers it): on a grid of powers of 4 from 16 to
16384 for M, N and K, the largest shapes whose product a crude estimate puts within a few microseconds
on an H200 (bytes at 3.5 TB/s or FLOPs at 35 TFLOP/s, whichever is longer, plus 2 us), keeping only
those no other kept shape holds. What the search then finds there decides which of them cover anything:
a row longer than HOST_BOUND_MS covers nothing.

    python scripts/host_bound_shapes.py > benchmarks/host-bound-shapes.toml
"""
from __future__ import annotations

import itertools

SIDES = [16, 64, 256, 1024, 4096, 16384]
BUDGET_US = 8.0


def estimate_us(M: int, N: int, K: int) -> float:
    moved = 4 * (M * K + K * N + M * N)
    return max(moved / 3.5e12, 2 * M * N * K / 35e12) * 1e6 + 2


def shapes() -> list[tuple[int, int, int]]:
    kept = [s for s in itertools.product(SIDES, repeat=3) if estimate_us(*s) <= BUDGET_US]
    return sorted(s for s in kept if not any(t != s and all(a >= b for a, b in zip(t, s)) for t in kept))


if __name__ == "__main__":
    print("# written by scripts/host_bound_shapes.py: the shapes whose rows cover host-bound calls")
    print("shapes = [")
    for M, N, K in shapes():
        print(f'  {{ group = "host-bound", M = {M}, N = {N}, K = {K} }},')
    print("]")
