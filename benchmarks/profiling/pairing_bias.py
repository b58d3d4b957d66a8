"""Is a pairing of two calls biased? torch.matmul paired with itself, with torch.mm and with load(), in both
orders, at GPU-bound and host-bound shapes (cuda_events.paired_ms, 6 rounds: each ratio is first / second),
then the kernels torch.matmul, torch.mm and load() launch at one shape (hotpath.kernels: torch.profiler).

    python benchmarks/profiling/pairing_bias.py > benchmarks/data/pairing-bias-h200.txt 2>&1

The committed output was measured with paired_ms as it was at 0ae0723 (each call's best round): a call
paired with itself came out below 1, faster first; paired_ms's ABBA median since 1d2d165 removes that.
(It then estimated a call's time from one round; paired_ms now takes an even number, two.)
"""
from __future__ import annotations

import sys
from pathlib import Path

import torch

import autotune

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from cuda_events import paired_ms  # noqa: E402
from hotpath import kernels  # noqa: E402  (its kernel names, cut at 90 characters)

SHAPES = [(4521, 461, 2599, False), (3052, 5395, 607, False), (2048, 11008, 4096, True), (466, 11945, 756, False),
          (144, 10131, 4, False), (1139, 570, 66, False)]  # M, N, K, B stored N x K
PAIRS = [("matmul", "matmul2"), ("matmul", "mm"), ("matmul", "ours"), ("ours", "matmul"), ("mm", "ours")]


def main() -> int:
    torch.backends.cuda.matmul.allow_tf32 = False
    mm = autotune.load()
    for M, N, K, tb in SHAPES:
        A = torch.randn(M, K, device="cuda")
        B = torch.randn(N, K, device="cuda") if tb else torch.randn(K, N, device="cuda")
        opB = B.t() if tb else B
        calls = {"matmul": lambda: torch.matmul(A, opB), "matmul2": lambda: torch.matmul(A, opB),
                 "mm": lambda: torch.mm(A, opB), "ours": lambda: mm(A, B, trans_b=tb)}
        once = paired_ms(torch, calls["matmul"], calls["matmul"], 3, 2)[0]
        reps = max(5, min(500, int(2.0 / max(once, 1e-4))))
        row: dict = {"shape": [M, N, K, tb]}
        for a, b in PAIRS:
            first, second = paired_ms(torch, calls[a], calls[b], reps, 6)
            row[f"{a}/{b}"] = round(first / second, 4)
        print(row, flush=True)
    A, B = torch.randn(4521, 2599, device="cuda"), torch.randn(2599, 461, device="cuda")
    for name, fn in [("matmul", lambda: torch.matmul(A, B)), ("mm", lambda: torch.mm(A, B)), ("ours", lambda: mm(A, B))]:
        print(name, kernels(torch, fn), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
