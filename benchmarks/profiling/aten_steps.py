"""Probe: what api._aten's steps (the tensors read and at::mm called from C++, against libtorch) save load()'s
first step in C, on the host. Host us a call, in one process, the runs in turn: torch.mm, torch.matmul, and
load()'s matmul with the steps taken and without (each run sets which, a C call, before its call).

    python benchmarks/profiling/aten_steps.py [--device cpu|cuda] [--commit SHA] [-o FILE]

On a GPU: load() as shipped at host-bound shapes, most of which cuBLAS computes (the line names what ran); on the
CPU, the product of 2x3 by 3x4 planned onto torch.mm (cuda_events.planned). Each shape is also called as x·Wᵀ
(NT: mm(A, W, trans_b=True) against torch.matmul(A, W.mT), the view made once, as anyshape.py times it).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parents[1]))
from cuda_events import CPU_CLOCK, host_lines, planned  # noqa: E402

import autotune  # noqa: E402
from autotune.api import aten_build, fastcall  # noqa: E402

CPU_SHAPES = [(2, 4, 3)]
GPU_SHAPES = [(64, 64, 64), (144, 10131, 4), (9954, 21, 61), (2, 504, 3921), (2088, 417, 10), (1139, 570, 66)]


def runs_at(mm, steps, shape: tuple[int, int, int], device: str, trans_b: bool = False) -> tuple[tuple, dict]:
    M, N, K = shape
    A = torch.randn(M, K, device=device)
    B = torch.randn(N, K, device=device) if trans_b else torch.randn(K, N, device=device)
    opB = B.mT if trans_b else B
    ours = mm if mm is not None else planned(fastcall.NATIVE.FastCall, torch, A, B, trans_b)
    want = torch.mm(A, opB)
    for take in (None, steps):
        fastcall.NATIVE.use_aten(take)
        assert torch.allclose(ours(A, B, trans_b=trans_b), want, rtol=1e-4, atol=1e-4)
    use, tmm, matmul = fastcall.NATIVE.use_aten, torch.mm, torch.matmul

    def without() -> object:
        use(None)
        return ours(A, B, trans_b=trans_b)

    def taken() -> object:
        use(steps)
        return ours(A, B, trans_b=trans_b)

    ran = mm.choose(M, N, K, A.get_device(), trans_b=trans_b).describe()[:40] if mm is not None else "torch.mm"
    return ((shape, "NT" if trans_b else "NN"), ran), {"torch.mm": lambda: tmm(A, opB),
                                                         "torch.matmul": lambda: matmul(A, opB),
                                                         "C": without, "C+ATen": taken}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--commit", default="", help="the sources' commit, written in the output")
    ap.add_argument("-o", "--out", help="also write the lines here")
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    steps = aten_build.steps(torch)
    if fastcall.NATIVE is None or steps is None:
        print("load()'s first step in C was not built, or api._aten for this torch (python -m autotune.api.aten_build)")
        return 1
    header = (f"# python benchmarks/profiling/aten_steps.py --device {args.device}, sources {args.commit or '?'}, "
              f"Python {sys.version.split()[0]}, torch {torch.__version__}: host us a call, median chunk of 500 of "
              f"8,000 calls, the four in turn; C and C+ATen: load()'s first step without and with api._aten's steps")
    mm = autotune.load() if args.device == "cuda" else None
    shapes = GPU_SHAPES if args.device == "cuda" else CPU_SHAPES
    host_lines(torch if args.device == "cuda" else CPU_CLOCK, header,
               (runs_at(mm, steps, shape, args.device, trans_b) for shape in shapes for trans_b in (False, True)),
               args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
