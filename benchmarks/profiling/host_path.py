"""Host microseconds a call of the pieces of a repeated torch call that cuBLAS computes, on the GPU's host:
torch.mm, torch.matmul and A.mm(B); load() as it is; load() with the product run inline in its __call__
(`Inline`, what Matmul.__call__ does since 637bf77: at that commit and later `load()` and `Inline` are the
same); the short way's closure alone; the table's key and lookup alone; the dtype and TF32 checks alone.
Wall clock over 4,000 calls, 500 at a time, the pieces taking turns (cuda_events.in_turn), the median chunk.

    python benchmarks/profiling/host_path.py

Run at 156965c (load() through a closure) on the H200: torch.mm 19.3-22.1 us a call at 144x10131x4,
1139x570x66 and 20x46x9236, load() 2.6 us more, inline 0.6-0.8 us less than load() (docs/pytorch.md). Run
again at ddb9409: benchmarks/data/host-path-h200.txt, where load() and Inline differed by 0.5-2.0 us though
they run the same steps; passthrough.py adds the pieces one at a time instead.
"""
from __future__ import annotations

import sys
from pathlib import Path

import torch

import autotune
from autotune.api.matmul import Matmul

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from cuda_events import host_us  # noqa: E402

TORCH = object()  # the table's mark for a product torch.mm computes, in Inline below
SHAPES = [(144, 10131, 4), (1139, 570, 66), (20, 46, 9236)]


class Inline(Matmul):
    """load() with torch.mm run inline for a kind of call marked TORCH in its table of short ways."""

    def __call__(self, A, B, out=None, *, alpha=1.0, beta=0.0, trans_a=False, trans_b=False, stream=None):
        if out is None and stream is None and alpha == 1.0 and beta == 0.0:
            try:
                way = self._fast[A.shape, B.shape, trans_a, trans_b, A.get_device()]
            except (KeyError, AttributeError):
                way = None
            if way is TORCH:
                if A.dtype is torch.float32 and not torch._C._get_cublas_allow_tf32():
                    return torch.mm(A, B)
            elif way is not None and (product := way(A, B)) is not None:
                return product
        return Matmul.__call__(self, A, B, out, alpha=alpha, beta=beta, trans_a=trans_a, trans_b=trans_b,
                               stream=stream)


def main() -> int:
    torch.backends.cuda.matmul.allow_tf32 = False
    tf32 = torch._C._get_cublas_allow_tf32
    for M, N, K in SHAPES:
        A, B = torch.randn(M, K, device="cuda"), torch.randn(K, N, device="cuda")
        ours = autotune.load()
        ours(A, B)
        inline = autotune.load()
        inline.__class__ = Inline
        inline(A, B)
        key = (A.shape, B.shape, False, False, A.get_device())
        closure = ours._fast[key]
        inline._fast[key] = TORCH
        table = {key: closure}
        runs = {"torch.mm": lambda: torch.mm(A, B), "torch.matmul": lambda: torch.matmul(A, B),
                "A.mm": lambda: A.mm(B), "ours": lambda: ours(A, B), "inline": lambda: inline(A, B),
                "closure": lambda: closure(A, B),
                "key+lookup": lambda: table[A.shape, B.shape, False, False, A.get_device()],
                "dtype+tf32": lambda: A.dtype is torch.float32 and not tf32()}
        print((M, N, K), host_us(torch, runs), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
