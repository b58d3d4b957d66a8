"""Probe: two gaps of load()'s cuBLAS pass-through that benchmarks/anyshape.py showed and nothing explains yet.

1. Alone: one call after a synchronisation took 3-9 us more through load() than through torch.matmul (events around
   the call), while back to back the two were within 1-2 us. Here, at host-bound shapes, each way's host time from
   the call to its return right after a synchronisation (wall clock, median of many), beside the events' time, for
   torch.matmul, torch.mm and load(): if the host times differ as the events do, the gap is on the host.
2. Queued, GPU-bound, NT: load() with trans_b=True ran 0.35-0.95% slower than torch.matmul(A, B.t()) at the
   transformer projections, although both end in the same cuBLAS call. Here the same pairs with twice the rounds,
   torch.mm(A, B.mT) beside them, and torch.matmul paired with itself (the method's own bias).

    python benchmarks/profiling/passthrough_gaps.py [-o FILE]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from cuda_events import in_turn, paired_ms  # noqa: E402

HOST_BOUND = [(144, 10131, 4), (2, 504, 3921), (4, 2846, 758)]  # random shapes that ran on cuBLAS at aac6ca7
PROJECTIONS = [(2048, 4096, 4096), (512, 3072, 768), (16, 4096, 4096)]  # x (M x K) times W^T (W: N x K)


def after_sync(run, calls: int = 400) -> tuple[float, float]:
    """(host us from the call to its return, events us around it), medians of `calls` calls each after a
    synchronisation."""
    host, events = [], []
    for _ in range(calls):
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        t = time.perf_counter()
        run()
        host.append((time.perf_counter() - t) * 1e6)
        end.record()
        end.synchronize()
        events.append(start.elapsed_time(end) * 1e3)
    return statistics.median(host), statistics.median(events)


def alone_lines(mm) -> list[str]:
    lines = []
    for M, N, K in HOST_BOUND:
        A, B = torch.randn(M, K, device="cuda"), torch.randn(K, N, device="cuda")
        runs = {"torch.matmul": lambda: torch.matmul(A, B), "torch.mm": lambda: torch.mm(A, B), "load()": lambda: mm(A, B)}
        for run in runs.values():
            run()
        got: dict[str, list[tuple[float, float]]] = {k: [] for k in runs}
        for r in range(6):  # the three in turn, 6 rounds, each round's medians
            names = list(runs)
            for i in in_turn(r, len(names)):
                got[names[i]].append(after_sync(runs[names[i]], 200))
        cells = {k: (round(statistics.median(h for h, _ in v), 2), round(statistics.median(e for _, e in v), 2))
                 for k, v in got.items()}
        lines.append(f"alone {(M, N, K)} (host us, events us): {cells}")
    return lines


def queued_lines(mm) -> list[str]:
    lines = []
    for M, N, K in PROJECTIONS:
        A, W = torch.randn(M, K, device="cuda"), torch.randn(N, K, device="cuda")
        Wt = W.t()
        theirs = lambda: torch.matmul(A, Wt)  # noqa: E731
        once = paired_ms(torch, theirs, theirs, 2, 2)[0]
        reps = max(5, min(500, int(2.0 / max(once, 1e-4))))
        pairs = {"load(trans_b=True)": lambda: mm(A, W, trans_b=True), "torch.mm(A, W.mT)": lambda: torch.mm(A, W.mT),
                 "torch.matmul itself": theirs}
        ratios = {}
        for name, ours in pairs.items():
            t, o = paired_ms(torch, theirs, ours, reps, 24)
            ratios[name] = round(t / o, 4)
        lines.append(f"queued NT {(M, N, K)} torch.matmul(A, W.t()) / x, 24 rounds of {reps}: {ratios}")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--out", help="also write the lines here")
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    import autotune
    from autotune.api.fastcall import FastCall

    mm = autotune.load()
    lines = [f"# python benchmarks/profiling/passthrough_gaps.py; torch {torch.__version__}, "
             f"{torch.cuda.get_device_name()}, load()'s first step {FastCall.__module__}.{FastCall.__name__}"]
    for line in alone_lines(mm) + queued_lines(mm):
        print(line, flush=True)
        lines.append(line)
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
