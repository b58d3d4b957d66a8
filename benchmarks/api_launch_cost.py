"""The host's time a call against the GPU's: autotune.load()'s matmul (on the tensors' current stream, read
from their attributes; and with stream= named, read through DLPack), the same kernel launched through
cuda.core's launch() (the launch path before launch.launch_function), and torch.matmul (TF32 off), each
called back to back. Where the host's time a call exceeds the GPU's, the GPU waits between calls.

    python3 benchmarks/api_launch_cost.py --db suite.sqlite --shapes 16x8192x8192,2048x2048x2048
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import autotune
from autotune.backends.cuda.launch import launch_kernel

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cuda_events import per_call  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True, help="the results database autotune.load() picks from")
    parser.add_argument("--shapes", default="16x8192x8192,16x14336x4096,2048x2048x2048")
    parser.add_argument("--calls", type=int, default=1000)
    args = parser.parse_args()
    import torch
    from cuda.core import Stream

    torch.backends.cuda.matmul.allow_tf32 = False
    mm = autotune.load(db=args.db)
    for text in args.shapes.split(","):
        M, N, K = (int(v) for v in text.split("x"))
        A, B, C = torch.randn(M, K, device="cuda"), torch.randn(K, N, device="cuda"), torch.empty(M, N, device="cuda")
        mm(A, B, out=C)
        choice = mm.choose(M, N, K)
        kernel = mm._kernels[next(k for k in mm._kernels if k[2] == choice.kernel)]
        stream = Stream.from_handle(torch.cuda.current_stream().cuda_stream)
        geo = choice.config.geometry(M, N)
        current = torch.cuda.current_stream()
        runs = {"autotune.load()": lambda: mm(A, B, out=C),
                "load(), stream=": lambda: mm(A, B, out=C, stream=current),
                "cuda.core launch()": lambda: launch_kernel(stream, kernel, geo, A.data_ptr(), B.data_ptr(), C.data_ptr(),
                                                            M, N, K),
                "torch.matmul": lambda: torch.matmul(A, B, out=C)}
        for name, run in runs.items():
            host, gpu = per_call(torch, run, args.calls, warmup=20)
            print(f"{text} {name:20} host {host:7.1f} us a call, GPU {gpu:7.1f} us a call  ({choice.kernel})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
