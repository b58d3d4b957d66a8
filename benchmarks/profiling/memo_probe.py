"""Probe: does the memo of the C first step (api/_fastcall.c, Python 3.12+) cost the host less than the table's
lookup alone? Host us a call of a planned cuBLAS call kind (a TorchProduct), in one process: torch.mm,
torch.matmul, load()'s first step as built here, and the same steps built from an older source of
_fastcall.c (--before: the file, e.g. `git show 870abd1:autotune/api/_fastcall.c`), compiled here with cc.

    python benchmarks/profiling/memo_probe.py --before build/before/_fastcall.c [--device cpu|cuda] [-o FILE]

On the CPU the product of 2x3 by 3x4 is timed; on a GPU, host-bound shapes of the random draws.
"""
from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parents[1]))
from cuda_events import CPU_CLOCK, host_lines, planned  # noqa: E402

from autotune.api import fastcall  # noqa: E402
from autotune.api.shortcuts import TorchProduct  # noqa: E402

CPU_SHAPES = [(2, 4, 3)]
GPU_SHAPES = [(64, 64, 64), (22, 7853, 97), (144, 10131, 4), (9954, 21, 61), (2, 504, 3921)]


def build_before(source: Path, into: Path):
    """The older source compiled as a module named _fastcall (its init function's name), loaded beside ours."""
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    target = into / f"_fastcall{suffix}"
    subprocess.run(["cc", "-shared", "-fPIC", "-O3", f"-I{sysconfig.get_paths()['include']}", str(source), "-o",
                    str(target)], check=True)
    spec = importlib.util.spec_from_file_location("before._fastcall", target)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.inline(TorchProduct)
    return module


def runs_at(before, shape: tuple[int, int, int], device: str) -> dict:
    M, N, K = shape
    A, B = torch.randn(M, K, device=device), torch.randn(K, N, device=device)
    ours, old = planned(fastcall.NATIVE.FastCall, torch, A, B), planned(before.FastCall, torch, A, B)
    want = torch.mm(A, B)
    assert torch.equal(ours(A, B), want) and torch.equal(old(A, B), want)
    mm, matmul = torch.mm, torch.matmul
    return {"torch.mm": lambda: mm(A, B), "torch.matmul": lambda: matmul(A, B), "first step": lambda: ours(A, B),
            "before": lambda: old(A, B)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", required=True, help="an older _fastcall.c to compare with")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--commit", default="", help="the sources' commit, written in the output")
    ap.add_argument("-o", "--out", help="also write the lines here")
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    if fastcall.NATIVE is None:
        print("load()'s first step in C was not built (setup.py build_ext --inplace)")
        return 1
    header = (f"# python benchmarks/profiling/memo_probe.py --device {args.device} --before {args.before}, sources "
              f"{args.commit or '?'}, Python {sys.version.split()[0]}, torch {torch.__version__}: host us a call, "
              f"median chunk of 500 of 8,000 calls, the four in turn")
    with tempfile.TemporaryDirectory() as tmp:
        before = build_before(Path(args.before), Path(tmp))
        shapes = GPU_SHAPES if args.device == "cuda" else CPU_SHAPES
        host_lines(torch if args.device == "cuda" else CPU_CLOCK, header,
                   ((shape, runs_at(before, shape, args.device)) for shape in shapes), args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
