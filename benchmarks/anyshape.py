"""autotune.load() against torch.matmul (TF32 off) at shapes nobody tuned one by one, as a user calls
it: torch tensors in, a new output out, host time included. Writes benchmarks/data/anyshape-<gpu>.json.

    python benchmarks/anyshape.py --db suite.sqlite --seed 1 --count 40 [--suite autotune/api/shapes.toml]

Shapes: `--count` drawn with the seed, M, N and K log-uniform in [1, 16384] with 1e6 <= MNK <= 6e10
(row-major A·B), then transformer projections (x·Wᵀ, W stored N x K, as nn.Linear calls it), then
with --suite the suite's shapes, and with --thin that many thin calls: M or N (in turn) log-uniform in
[1, 8], the other two in [1, 16384], every other few-row one as x·Wᵀ (NT), as a decoding step calls a
projection (thin_shapes; a stream of the seed's own, so the random shapes stay those of the seed), and with
--decode that many x·Wᵀ calls of one row, N and K log-uniform in [16, 16384], as a decoding step of one
token calls its projections (decode_shapes; another stream of the seed's). Each shape is timed two ways,
for both in the same process:
- queued: CUDA events around `reps` calls back to back (the median round's mean of --rounds, the two
  taking turns round by round), so a call costs max(host time, GPU time);
- alone: events around one call after a synchronisation (the median of --alone calls): its launch
  latency and host time included.
The host cost of one call at 64³ (2,000 calls back to back, wall clock, no synchronisation
inside; the two in turn, 500 calls at a time) is reported beside. Every product is checked against torch's (relative Frobenius error).
With --forced, at every random shape where load() runs cuBLAS although a kernel was measured there (after
--cover), that kernel is also timed against torch.matmul both ways (`forced`: load(library=False)), beside its
recorded GPU time and cuBLAS's: what running it would have given, the evidence for api.dispatch's margins.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import tomllib

import autotune
from autotune.api import fastcall
from autotune.api.python import databases
from autotune.space.devices import gpu_tag

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cuda_events import in_turn, paired_ms, time_ms  # noqa: E402
from sources import commit  # noqa: E402

# (tokens, out_features, in_features) of common projections: x (tokens x in) · Wᵀ (W: out x in)
PROJECTIONS = [(2048, 4096, 4096), (2048, 11008, 4096), (2048, 4096, 11008), (2048, 12288, 4096),
               (512, 3072, 768), (512, 768, 3072), (16, 4096, 4096), (1, 14336, 4096)]


def first_step() -> str:
    """What load()'s first step ran as (api.fastcall): C, with api._aten's steps against libtorch where it took them."""
    return "Python" if fastcall.NATIVE is None else "C+ATen" if fastcall.ATEN else "C"


def random_shapes(seed: int, count: int) -> list[tuple[int, int, int]]:
    rng, out = np.random.default_rng(seed), []
    while len(out) < count:
        M, N, K = (int(round(math.exp(x))) for x in rng.uniform(0, math.log(16384), 3))
        if 1e6 <= M * N * K <= 6e10:
            out.append((M, N, K))
    return out


def thin_shapes(seed: int, count: int) -> list[tuple[tuple[int, int, int], bool]]:
    """(shape, trans_b) of `count` thin calls: few rows (even draws) or few columns (odd), M·N·K at least 1e5."""
    rng, out = np.random.default_rng([seed, 8]), []
    while len(out) < count:
        small = int(round(math.exp(rng.uniform(0, math.log(8)))))
        one, two = (int(round(math.exp(x))) for x in rng.uniform(0, math.log(16384), 2))
        rows = len(out) % 2 == 0
        shape = (small, one, two) if rows else (one, small, two)
        if shape[0] * shape[1] * shape[2] >= 1e5:
            out.append((shape, rows and len(out) % 4 == 0))
    return out


def decode_shapes(seed: int, count: int) -> list[tuple[tuple[int, int, int], bool]]:
    """(shape, trans_b) of `count` x·Wᵀ calls of one row: (1, N, K), W stored N x K."""
    rng = np.random.default_rng([seed, 1])
    drawn = (tuple(int(round(math.exp(x))) for x in rng.uniform(math.log(16), math.log(16384), 2)) for _ in range(count))
    return [((1, n, k), True) for n, k in drawn]


def how_many(text: str) -> int:
    """A count of shapes to draw: a whole number, 0 or more (argparse's type: anything else is one line, exit 2)."""
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r}: pass a whole number of shapes, 0 or more")
    return int(text)


def one_call_ms(torch, run) -> float:
    """Events around one call after a synchronisation."""
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    run()
    end.record()
    end.synchronize()
    return start.elapsed_time(end)


def alone_ms(torch, ours, theirs, calls: int) -> tuple[float, float]:
    """Medians of single calls, the two taken in turn (which goes first swapped each time), so that both
    see the same clocks."""
    times: tuple[list[float], list[float]] = ([], [])
    for c in range(calls):
        for i in in_turn(c):
            times[i].append(one_call_ms(torch, (theirs, ours)[i]))
    return statistics.median(times[0]), statistics.median(times[1])


def compared(torch, ours, theirs, rounds: int, alone: int) -> tuple[dict, int]:
    """Our call against torch's, both ways (queued: paired_ms; alone: alone_ms), with the relative Frobenius error
    of our result against theirs, and the calls a queued round takes (about 2 ms of work)."""
    ref = theirs().double()
    error = float(torch.linalg.norm(ours().double() - ref) / max(torch.linalg.norm(ref), 1e-30))
    once = time_ms(torch, theirs, 3, 1)
    reps = max(5, min(500, int(2.0 / max(once, 1e-4))))
    torch_alone, ours_alone = alone_ms(torch, ours, theirs, alone)
    torch_ms, ours_ms = paired_ms(torch, theirs, ours, reps, rounds)
    return {"torch_ms": torch_ms, "ours_ms": ours_ms, "torch_alone_ms": torch_alone, "ours_alone_ms": ours_alone,
            "err": error}, reps


def measure(torch, mm, shape, trans_b: bool, kind: str, control: bool = False, rounds: int = 12,
            alone: int = 100, forced=None) -> dict:
    M, N, K = shape
    A = torch.randn(M, K, device="cuda")
    B = torch.randn(N, K, device="cuda") if trans_b else torch.randn(K, N, device="cuda")
    opB = B.t() if trans_b else B
    # as a user writes each: mm(A, B) in place of torch.matmul(A, B); x·Wᵀ with the transpose named
    ours = (lambda: mm(A, B, trans_b=True)) if trans_b else (lambda: mm(A, B))
    theirs = lambda: torch.matmul(A, opB)  # noqa: E731
    timed, reps = compared(torch, ours, theirs, rounds, alone)
    row = {"M": M, "N": N, "K": K, "layout": "NT" if trans_b else "NN", "kind": kind, **timed,
           "kernel": mm.choose(M, N, K, torch.cuda.current_device(), trans_b=trans_b).describe()}
    if control:  # the method's own bias: torch.matmul paired with itself (1.0 when unbiased)
        first, again = paired_ms(torch, theirs, lambda: torch.matmul(A, opB), reps, rounds)
        row["control"] = first / again
    if forced is not None and row["kernel"].startswith("cuBLAS"):
        row.update(forced_run(torch, forced, A, B, shape, theirs, reps, rounds, alone))
    return row


def forced_run(torch, forced, A, B, shape, theirs, reps: int, rounds: int, alone: int) -> dict:
    """The kernel measured at this very shape (load(library=False)'s exact choice) timed against torch.matmul
    both ways, with the GPU times its row recorded (its own and cuBLAS's); {} where no row was measured here."""
    choice = forced.choose(*shape, torch.cuda.current_device())
    if choice.origin != "exact":
        return {}
    run = lambda: forced(A, B)  # noqa: E731
    torch_alone, forced_alone = alone_ms(torch, run, theirs, alone)
    torch_ms, forced_ms = paired_ms(torch, theirs, run, reps, rounds)
    row = recorded(forced.dispatcher, shape, choice.kernel)
    return {"forced_kernel": choice.kernel, "forced_torch_ms": torch_ms, "forced_ms": forced_ms,
            "forced_torch_alone_ms": torch_alone, "forced_alone_ms": forced_alone,
            "forced_row_ms": row.get("time_ms"), "forced_row_cublas_ms": row.get("cublas_ms")}


def recorded(dispatcher, shape, kernel: str) -> dict:
    """The fastest verified row of `kernel` at `shape` in the dispatcher's databases: its time and cuBLAS's."""
    for db in dispatcher._dbs:
        row = db.execute("SELECT time_ms, cublas_ms FROM results WHERE M=? AND N=? AND K=? AND kernel=? AND "
                         "status='ok' ORDER BY time_ms LIMIT 1", (*shape, kernel)).fetchone()
        if row is not None:
            return {"time_ms": row[0], "cublas_ms": row[1]}
    return {}


def host_us(torch, runs, calls: int = 2000, chunk: int = 500) -> list[float]:
    """Host microseconds a call of each of `runs`, over `calls` calls each, taken in turn `chunk` at a time."""
    for run in runs:
        for _ in range(50):
            run()
    torch.cuda.synchronize()
    spent = [0.0] * len(runs)
    for r in range(calls // chunk):
        for i in in_turn(r, len(runs)):
            start = time.perf_counter()
            for _ in range(chunk):
                runs[i]()
            spent[i] += time.perf_counter() - start
            torch.cuda.synchronize()
    return [s / (calls // chunk * chunk) * 1e6 for s in spent]


def geomean(xs: list[float]) -> float:
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def summary(rows: list[dict]) -> dict:
    queued = [r["torch_ms"] / r["ours_ms"] for r in rows]
    alone = [r["torch_alone_ms"] / r["ours_alone_ms"] for r in rows]
    return {"shapes": len(rows), "geomean_queued": geomean(queued), "geomean_alone": geomean(alone),
            "min_queued": min(queued), "min_alone": min(alone), "below_0.95_queued": sum(q < 0.95 for q in queued),
            "kernels": sum(not r["kernel"].startswith("cuBLAS") for r in rows), "max_err": max(r["err"] for r in rows),
            **({"control_geomean": geomean(c)} if (c := [r["control"] for r in rows if "control" in r]) else {})}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", help="results database (default: autotune.load()'s)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--count", type=how_many, default=40)
    parser.add_argument("--control", type=int, default=8, help="at this many random shapes (and as many thin and "
                        "decoding ones), also torch.matmul paired with itself: the timing method's own bias")
    parser.add_argument("--rounds", type=int, default=12, help="queued: rounds of about 2 ms of calls each, taken in "
                        "turn (an even number); the median round's mean is reported. At 6 rounds torch.matmul paired "
                        "with itself read 0.97-1.05 at host-bound shapes")
    parser.add_argument("--alone", type=int, default=100, help="alone: calls of each, one at a time; the median")
    parser.add_argument("--thin", type=how_many, default=0, help="also this many thin calls (M or N at most 8) drawn with "
                        "the seed: thin_shapes")
    parser.add_argument("--decode", type=how_many, default=0, help="also this many x·Wᵀ calls of one row drawn with "
                        "the seed: decode_shapes")
    parser.add_argument("--suite", help="a shapes file (autotune/api/shapes.toml) whose shapes are measured too")
    parser.add_argument("--commit", default="", help="the sources' commit, recorded in the output")
    parser.add_argument("--cover", type=float, help="first `autotune cover` the random and projection products with "
                        "this many seconds of searching, into --cover-db; load() then reads it beside the shipped one")
    parser.add_argument("--cover-db", default="cover.sqlite")
    parser.add_argument("--cover-trials", type=int, default=8)
    parser.add_argument("--forced", action="store_true", help="also time, where cuBLAS runs, the kernel measured "
                        "at that very shape (load(library=False))")
    parser.add_argument("-o", "--out", help="output JSON (default benchmarks/data/anyshape-<gpu>.json)")
    args = parser.parse_args()
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    groups = {"random": [(s, False) for s in random_shapes(args.seed, args.count)],
              "projection": [(s, True) for s in PROJECTIONS]}
    covered = cover(groups, args) if args.cover else None
    mm = autotune.load(db=args.db)
    forced = autotune.load(db=args.db, library=False) if args.forced else None
    if args.thin:
        groups["thin"] = thin_shapes(args.seed, args.thin)
    if args.decode:
        groups["decode"] = decode_shapes(args.seed, args.decode)
    if args.suite:
        groups["suite"] = [((s["M"], s["N"], s["K"]), False) for s in tomllib.loads(Path(args.suite).read_text())["shapes"]]
    rows = []
    for kind, shapes in groups.items():
        for i, (shape, trans_b) in enumerate(shapes):
            control = kind in ("random", "thin", "decode") and i < args.control
            rows.append(measure(torch, mm, shape, trans_b, kind, control,
                                args.rounds, args.alone, forced if kind == "random" and not trans_b else None))
            r = rows[-1]
            print(f"{kind:10s} {r['M']:>5}x{r['N']:>5}x{r['K']:>5} {r['layout']} torch/ours queued "
                  f"{r['torch_ms'] / r['ours_ms']:.3f} alone {r['torch_alone_ms'] / r['ours_alone_ms']:.3f} "
                  f"err {r['err']:.1e} {r['kernel'][:60]}", flush=True)
            if "forced_ms" in r:
                print(f"{'':10s} forced {r['forced_kernel'][:50]}: queued {r['forced_torch_ms'] / r['forced_ms']:.3f} "
                      f"alone {r['forced_torch_alone_ms'] / r['forced_alone_ms']:.3f}", flush=True)
    a, b = torch.randn(64, 64, device="cuda"), torch.randn(64, 64, device="cuda")
    ours_us, torch_us = host_us(torch, [lambda: mm(a, b), lambda: torch.matmul(a, b)])
    host = {"shape": [64, 64, 64], "calls": 2000, "ours_us": ours_us, "torch_us": torch_us,
            "kernel": mm.choose(64, 64, 64, torch.cuda.current_device()).describe()}
    gpu = torch.cuda.get_device_name()
    out = {"device": gpu, "database": args.db or " + ".join(databases(None)), "cover": covered, "seed": args.seed, "commit": args.commit or commit(),
           "torch": torch.__version__, "method": {"rounds": args.rounds, "alone_calls": args.alone},
           "first_step": first_step(),  # load()'s first step (api.fastcall)
           "host_per_call": host, "shapes": rows,
           "summary": {kind: summary([r for r in rows if r["kind"] == kind]) for kind, drawn in groups.items() if drawn}}
    path = Path(args.out or f"benchmarks/data/anyshape-{gpu_tag(gpu)}.json")
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps({"summary": out["summary"], "host_per_call": host}, indent=1))
    return 0


def cover(groups: dict, args: argparse.Namespace) -> dict:
    """`autotune cover` of the random and projection products (the budget and what it found)."""
    from autotune.api.cover import CoverOptions, Product, run_cover
    from autotune.families import FAMILIES, families_for

    os.environ["AUTOTUNE_DB"] = args.cover_db  # load() reads it first, then the shipped database
    products = [Product(s, "NT" if tb else "NN", kind) for kind, shapes in groups.items() for s, tb in shapes]
    families = [FAMILIES[n] for n in families_for("fp32") if n != "naive"]
    started = time.monotonic()
    rows = run_cover(CoverOptions(products, args.cover_db, families, args.cover, args.cover_trials))
    return {"budget_s": args.cover, "trials": args.cover_trials, "took_s": round(time.monotonic() - started, 1),
            "kernels": sum(r["runs"] == "kernel" for r in rows), "products": rows}


if __name__ == "__main__":
    sys.exit(main())
