"""How near two problem shapes are: the rule by which a shape never tuned borrows the results of
recorded ones (search starts, `best`, `export`).

    distance((M, N, K), (M', N', K')) = |log2(M/M')| + |log2(N/N')| + |log2(K/K')|

On a log scale because what makes a kernel good scales with ratios, not differences: 4096 and
4097 rows are the same problem for a tiling (distance 0.0004), 16 and 64 rows are not (distance
2: a tile that fits 64 rows wastes three quarters of itself on 16). Each dimension counts alike:
M and N decide the number of output tiles, K the length of the inner loop and whether to split it.

Ties (1024^3 is as far from 2048^3 as 4096^3 is) go to the smaller shape, by the number of
multiply-adds M*N*K, then by M, N, K in order: a kernel tuned for the smaller shape keeps the
GPU busy at the larger one, while one tuned for the larger shape may have tiles too large to
give the smaller shape enough blocks.
"""
from __future__ import annotations

import math
from typing import Iterable

Shape = tuple[int, int, int]


def shape_distance(a: Shape, b: Shape) -> float:
    """Sum over M, N, K of |log2| of their ratio (see the module doc)."""
    return sum(abs(math.log2(x / y)) for x, y in zip(a, b))


def nearness(target: Shape, shape: Shape) -> tuple[float, int, int, int, int]:
    """The sort key of the rule: distance first, then the ties' order."""
    M, N, K = shape
    return shape_distance(target, shape), M * N * K, M, N, K


def rank_shapes(target: Shape, shapes: Iterable[Shape]) -> list[Shape]:
    """The shapes other than `target`, nearest first, each once."""
    return sorted({tuple(s) for s in shapes if tuple(s) != tuple(target)},  # type: ignore[misc]
                  key=lambda s: nearness(target, s))


def shape_text(shape: Shape) -> str:
    return "x".join(map(str, shape))
