"""Host time per call, by path, at host-bound shapes: torch.matmul, torch.mm, autotune.load() (cuBLAS
through torch), load(library=False) (our kernel), and the kernel's bare launch (launch_function after
new_empty). `--calls` calls back to back, wall clock (no synchronisation inside), and CUDA events around
the same calls (queued: max of host and GPU time); the paths take turns for `--rounds` rounds, medians kept.

    python benchmarks/host_cost.py --shapes 64x64x64,144x10131x4 [-o host-cost.json]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path
from typing import Any

import autotune
from autotune.api import fastcall

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cuda_events import per_call  # noqa: E402


def command_line() -> str:
    """This run's command as docs cite it: without --commit and its value, with AUTOTUNE_PURE_PYTHON where set."""
    words, skip = [], False
    for word in sys.argv[1:]:
        if skip or word == "--commit" or word.startswith("--commit="):
            skip = word == "--commit"
            continue
        words.append(word)
    env = "AUTOTUNE_PURE_PYTHON=1 " if os.environ.get("AUTOTUNE_PURE_PYTHON") == "1" else ""
    return env + " ".join(["python benchmarks/host_cost.py", *words])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default="64x64x64,144x10131x4,1081x3322x15,11516x4x108,256x256x256")
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("-o", "--out")
    parser.add_argument("--commit", default="", help="the sources' commit, recorded in the output")
    args = parser.parse_args()
    import torch

    from autotune.backends.cuda.launch import launch_function

    torch.backends.cuda.matmul.allow_tf32 = False
    mm, own = autotune.load(), autotune.load(library=False)
    rows = []
    for text in args.shapes.split(","):
        M, N, K = (int(v) for v in text.split("x"))
        A, B = torch.randn(M, K, device="cuda"), torch.randn(K, N, device="cuda")
        own(A, B)
        plan = next(iter(own._plans.values()))
        function = own.launcher._function(0, plan.kernel)
        stream = torch.cuda.current_stream().cuda_stream

        def bare() -> Any:
            C = A.new_empty((M, N))
            launch_function(stream, function, plan.geometry, A.data_ptr(), B.data_ptr(), C.data_ptr(), M, N, K)
            return C

        runs = {"torch.matmul": lambda: torch.matmul(A, B), "torch.mm": lambda: torch.mm(A, B),
                "load()": lambda: mm(A, B), "load(library=False)": lambda: own(A, B), "bare launch": bare,
                "new_empty": lambda: A.new_empty((M, N)), "torch.empty": lambda: torch.empty((M, N), device=A.device)}
        row: dict[str, Any] = {"shape": [M, N, K], "kernel": own.choose(M, N, K).kernel}
        names = list(runs)
        rounds: dict[str, list[tuple[float, float]]] = {name: [] for name in names}
        for r in range(args.rounds):  # in turn, each round in another order: drifts of the host hit all alike
            for name in names[r % len(names):] + names[:r % len(names)]:
                rounds[name].append(per_call(torch, runs[name], args.calls))
        for name in names:
            row[name] = [round(statistics.median(x[i] for x in rounds[name]), 2) for i in (0, 1)]
        rows.append(row)
        print(json.dumps(row), flush=True)
        own._plans.clear()
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "commit": args.commit,
                       "command": command_line(), "first_step": "C" if fastcall.NATIVE is not None else "Python",
                       "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
