"""Where load() stands at the random shapes whose calls are host-bound: per shape, the queued time (CUDA events
around calls back to back) of torch.matmul, load() as shipped, and two of our kernels run anyway (the nearest
recorded shape's, load(library=False), and the family default, defaults_only), beside each one's GPU time
alone (a CUDA graph of the same calls replayed: no host in it) and one call timed alone.

    python benchmarks/profiling/hostbound_probe.py --db hb.sqlite --seeds 1,2,3 > probe.json
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any, Callable

import autotune

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from anyshape import one_call_ms, random_shapes  # noqa: E402
from cuda_events import time_ms  # noqa: E402


def graph_us(torch: Any, run: Callable[[], object], calls: int = 20) -> float:
    """GPU microseconds a call: a CUDA graph of `calls` calls replayed (the host launches the graph once)."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            run()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(calls):
            run()
    return time_ms(torch, graph.replay, 5, 5) * 1e3 / calls


def alone_us(torch: Any, run: Callable[[], object], calls: int = 30) -> float:
    return statistics.median(one_call_ms(torch, run) for _ in range(calls)) * 1e3


def probe(torch: Any, mms: dict[str, Any], shape: tuple[int, int, int]) -> dict:
    M, N, K = shape
    A, B = torch.randn(M, K, device="cuda"), torch.randn(K, N, device="cuda")
    runs = {"torch": lambda: torch.matmul(A, B), **{name: (lambda mm=mm: mm(A, B)) for name, mm in mms.items()}}
    row: dict[str, Any] = {"M": M, "N": N, "K": K}
    for name, run in runs.items():
        row[name] = {"queued_us": time_ms(torch, run, 200, 5) * 1e3, "alone_us": alone_us(torch, run)}
        if name != "load":
            row[name]["gpu_us"] = graph_us(torch, run)
        if name != "torch":
            row[name]["kernel"] = mms[name].choose(M, N, K).describe()[:90]
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", help="a database of more rows than the shipped one, read beside it by the nearest")
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--count", type=int, default=40)
    parser.add_argument("--commit", default="", help="the sources' commit, recorded in the output")
    args = parser.parse_args()
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    mms = {"load": autotune.load(), "nearest": autotune.load(db=args.db, library=False),
           "default": autotune.load(defaults_only=True)}
    rows = []
    for seed in (int(s) for s in args.seeds.split(",")):
        for shape in random_shapes(seed, args.count):
            if shape[0] * shape[1] * shape[2] > 3e8:
                continue  # not host-bound
            rows.append({"seed": seed, **probe(torch, mms, shape)})
            r = rows[-1]
            print(" ".join(f"{k}={v['queued_us']:.1f}/{v.get('gpu_us', 0):.1f}/{v['alone_us']:.1f}"
                           for k, v in r.items() if isinstance(v, dict)), shape, file=sys.stderr, flush=True)
    command = "python benchmarks/profiling/hostbound_probe.py " + " ".join(sys.argv[1:])
    print(json.dumps({"device": torch.cuda.get_device_name(), "commit": args.commit, "command": command, "rows": rows}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
