"""autotune.load()'s matmul against torch.matmul (TF32 off) on torch tensors, timed the same way:
CUDA events around `--reps` back-to-back calls on the current stream, after warm-up, best of
`--rounds`. Prints both, their ratio, the kernel chosen and why, and the relative error.

    python benchmarks/api_vs_torch.py --M 4096 --db db/autotune.sqlite [--layout NT]

--layout NT is nn.Linear's product x * W^T: B is passed as stored, N x K, with trans_b=True, and
torch.matmul gets the transposed view B.t() (what nn.Linear hands to cuBLAS).

The ratio includes everything a caller pays per call (reading the arrays through DLPack, the
cached choice, the launch), not only the kernel: that is the speed a user gets.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import autotune

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cuda_events import time_ms  # noqa: E402

from autotune.backends.reference import TOLERANCE


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--M", type=int, default=4096)
    parser.add_argument("--N", type=int)
    parser.add_argument("--K", type=int)
    parser.add_argument("--db", help="results database (default: AUTOTUNE_DB or db/autotune.sqlite)")
    parser.add_argument("--defaults-only", action="store_true", help="no database: the blocked default kernel")
    parser.add_argument("--layout", choices=("NN", "NT", "TN", "TT"), default="NN", help="T: that operand stored transposed")
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    M, N, K = args.M, args.N or args.M, args.K or args.M
    mm = autotune.load(db=args.db, defaults_only=args.defaults_only)
    ta, tb = args.layout[0] == "T", args.layout[1] == "T"
    A = torch.randn(K, M, device="cuda") if ta else torch.randn(M, K, device="cuda")
    B = torch.randn(N, K, device="cuda") if tb else torch.randn(K, N, device="cuda")
    opA, opB = (A.t() if ta else A), (B.t() if tb else B)
    C, ref = torch.empty(M, N, device="cuda"), torch.empty(M, N, device="cuda")
    ours = time_ms(torch, lambda: mm(A, B, out=C, trans_a=ta, trans_b=tb), args.reps, args.rounds)
    theirs = time_ms(torch, lambda: torch.matmul(opA, opB, out=ref), args.reps, args.rounds)
    error = float(torch.linalg.norm((C - ref).double()) / torch.linalg.norm(ref.double()))
    flops = 2.0 * M * N * K
    print(f"{torch.cuda.get_device_name()}, {M}x{N}x{K} {args.layout}, FP32 (TF32 off)")
    print(f"kernel: {mm.choose(M, N, K, torch.cuda.current_device(), trans_a=ta, trans_b=tb).describe()}")
    print(f"autotune.load(): {ours:.3f} ms  {flops / ours / 1e9:.2f} TFLOP/s")
    print(f"torch.matmul:    {theirs:.3f} ms  {flops / theirs / 1e9:.2f} TFLOP/s")
    print(f"speed vs torch.matmul: {theirs / ours:.1%}; relative error {error:.2e} (tolerance {TOLERANCE:g})")
    return 0 if error <= TOLERANCE else 1


if __name__ == "__main__":
    sys.exit(main())
