"""Probe: would load()'s cuBLAS pass-through cost the host less if it called at::mm from C++ (linked against
libtorch) instead of torch.mm through Python? Host us a call, for each way of computing the same product:
torch.mm and torch.matmul from Python, load()'s first step in C over a TorchProduct (api.fastcall, as a
planned call that cuBLAS computes runs it), at::mm from C++ on the two tensors (aten_direct.cpp's mm), and
the whole short way in C++ (its keyed: the key from the tensors' sizes, the lookup, at::mm).

    python benchmarks/profiling/aten_direct.py [--device cpu|cuda] [-o FILE]

Builds aten_direct.cpp with torch.utils.cpp_extension (a C++ compiler and ninja needed). On the CPU the
product of 2x3 by 3x4 is what is timed; on a GPU, the host-bound shapes of passthrough.py.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
import torch.utils.cpp_extension as cpp_extension

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parents[1]))
import sources  # noqa: E402
from cuda_events import CPU_CLOCK, host_lines, planned  # noqa: E402

from autotune.api import fastcall  # noqa: E402

CPU_SHAPES = [(2, 4, 3)]
GPU_SHAPES = [(144, 10131, 4), (9954, 21, 61), (2, 504, 3921)]


def runs_at(ext, first_step: type, shape: tuple[int, int, int], device: str) -> dict:
    M, N, K = shape
    A, B = torch.randn(M, K, device=device), torch.randn(K, N, device=device)

    ours = planned(first_step, torch, A, B)
    ext.set_table(ours._fast)
    want = torch.mm(A, B)
    for run in (ours, ext.mm, ext.keyed):
        assert torch.equal(run(A, B), want), run
    mm, matmul, direct, keyed = torch.mm, torch.matmul, ext.mm, ext.keyed
    return {"torch.mm": lambda: mm(A, B), "torch.matmul": lambda: matmul(A, B), "load()'s first step": lambda: ours(A, B),
            "at::mm from C++": lambda: direct(A, B), "key, lookup, at::mm in C++": lambda: keyed(A, B)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("-o", "--out", help="also write the lines here")
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    ext = cpp_extension.load("aten_direct", [str(HERE / "aten_direct.cpp")], extra_cflags=["-O2"], is_python_module=True)
    first_step = fastcall.compiled()
    if first_step is None:
        print("load()'s first step in C was not built (setup.py build_ext --inplace)")
        return 1
    commit = sources.commit()
    header = (f"# python benchmarks/profiling/aten_direct.py --device {args.device}, sources {commit or '?'}, torch "
              f"{torch.__version__}: host us a call, median chunk of 500 of 8,000 calls")
    shapes = GPU_SHAPES if args.device == "cuda" else CPU_SHAPES
    host_lines(torch if args.device == "cuda" else CPU_CLOCK, header,
               ((shape, runs_at(ext, first_step, shape, args.device)) for shape in shapes), args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
