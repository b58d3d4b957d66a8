"""autotune.torch.Linear against torch.nn.Linear (TF32 off), one layer call at a time, as a model calls its
layers while decoding: the same weight and bias, an input of a few rows, host time included. Writes
benchmarks/data/linear-layers-<gpu>.json (with --grad, linear-layers-grad-<gpu>.json).

    python benchmarks/linear_layers.py --seed 1 --count 40 [--rows 1] [--grad]

Layers: `--count` drawn with the seed as anyshape.py's decode_shapes draws them (out_features N and
in_features K log-uniform in [16, 16384]), each called on an input of `--rows` rows, once with a bias and
once without (the two are separate layers holding the same weight). Each call is timed as anyshape.py
times a product: queued (events around calls back to back, the two layers in ABBA turns, the median round)
and alone (events around one call after a synchronisation, the median), in the same process. The row
names what load()'s dispatcher chose for the layer's product (x·Wᵀ) and whether our kernel ran it or
cuBLAS ("F.linear": F.linear, or torch's product through load()'s pass-through), by autotune.torch.nn's rule:
cuBLAS where the dispatcher chooses it, and with autograd also where the choice is a covering row's. Under
torch.no_grad() a layer's bias goes to load()'s matmul with its product (mm(x, W, trans_b=True, bias=b)): cuBLAS's
addmm, as F.linear's, or our kernel then the bias's kernel (api.bias). --grad: each call is
a training step's, forward with autograd on and backward with a fixed gradient, in place of a call under
torch.no_grad().
"""
from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path

import autotune.torch as at
from autotune.space.devices import gpu_tag
from autotune.torch.nn import _runs_library  # the layer's own rule: F.linear or our kernel

sys.path.insert(0, str(Path(__file__).resolve().parent))
from anyshape import compared, decode_shapes, geomean, how_many  # noqa: E402
from cuda_events import paired_ms  # noqa: E402
from sources import commit  # noqa: E402


def measure(torch, rows: int, out_features: int, in_features: int, bias: bool, rounds: int, alone: int,
            grad: bool = False, control: bool = False) -> dict:
    theirs = torch.nn.Linear(in_features, out_features, bias=bias, device="cuda")
    ours = at.Linear(in_features, out_features, bias=bias, device="cuda")
    ours.weight, ours.bias = theirs.weight, theirs.bias  # one set of parameters, read by both
    x = torch.randn(rows, in_features, device="cuda", requires_grad=grad)
    g = torch.randn(rows, out_features, device="cuda")

    def call(layer):
        if not grad:
            return layer(x)
        y = layer(x)  # a training step's layer call: forward recorded, then backward with one fixed gradient
        y.backward(g)
        return y.detach()

    with contextlib.nullcontext() if grad else torch.no_grad():
        timed, reps = compared(torch, lambda: call(ours), lambda: call(theirs), rounds, alone)
        if control:  # the method's own bias: nn.Linear paired with a twin of the same parameters (1.0: none)
            twin = torch.nn.Linear(in_features, out_features, bias=bias, device="cuda")
            twin.weight, twin.bias = theirs.weight, theirs.bias
            first, again = paired_ms(torch, lambda: call(theirs), lambda: call(twin), reps, rounds)
    choice = at.current().choose(rows, out_features, in_features, torch.cuda.current_device(), trans_b=True)
    runs = "F.linear" if _runs_library(x, ours.weight, grad) else "kernel"  # as Linear._eager asks
    return {"M": rows, "N": out_features, "K": in_features, "bias": bias, "runs": runs, **timed,
            "kernel": choice.describe(), **({"control": first / again} if control else {})}


def summary(rows: list[dict]) -> dict:
    queued = [r["torch_ms"] / r["ours_ms"] for r in rows]
    alone = [r["torch_alone_ms"] / r["ours_alone_ms"] for r in rows]
    kernel = [q for q, r in zip(queued, rows) if r["runs"] == "kernel"]
    control = [r["control"] for r in rows if "control" in r]
    return {"layers": len(rows), "geomean_queued": geomean(queued), "geomean_alone": geomean(alone),
            "min_queued": min(queued), "below_0.95_queued": sum(q < 0.95 for q in queued),
            "kernel_layers": len(kernel), "kernel_geomean_queued": geomean(kernel),
            **({"control_geomean": geomean(control), "control_min": min(control), "control_max": max(control)}
               if control else {})}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--count", type=how_many, default=40)
    parser.add_argument("--rows", type=how_many, default=1, help="rows of each layer's input (tokens decoded at once)")
    parser.add_argument("--grad", action="store_true",
                        help="time forward and backward with autograd on (a training step's call), not under no_grad")
    parser.add_argument("--control", type=how_many, default=0,
                        help="at this many of the layers (with and without a bias), nn.Linear paired with a twin "
                             "nn.Linear too: the method's own bias, 1.0 where it has none")
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--alone", type=int, default=100)
    parser.add_argument("--commit", default="", help="the sources' commit, recorded in the output")
    parser.add_argument("-o", "--out", help="output JSON (default benchmarks/data/linear-layers-<gpu>.json)")
    args = parser.parse_args()
    if args.rows < 1:
        parser.error("--rows: pass at least 1")
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    rows = []
    for i, ((_, N, K), _) in enumerate(decode_shapes(args.seed, args.count)):
        for bias in (True, False):
            rows.append(measure(torch, args.rows, N, K, bias, args.rounds, args.alone, args.grad, i < args.control))
            r = rows[-1]
            control = f" control {r['control']:.3f}" if "control" in r else ""
            print(f"{r['M']}x{N:>5}x{K:>5} bias {bias!s:5} {r['runs']:8s} nn.Linear/ours queued "
                  f"{r['torch_ms'] / r['ours_ms']:.3f} alone {r['torch_alone_ms'] / r['ours_alone_ms']:.3f}{control} "
                  f"err {r['err']:.1e} {r['kernel'][:60]}", flush=True)
    gpu = torch.cuda.get_device_name()
    out = {"device": gpu, "seed": args.seed, "rows": args.rows, "grad": args.grad, "commit": args.commit or commit(),
           "torch": torch.__version__, "method": {"rounds": args.rounds, "alone_calls": args.alone,
                                                  "control_layers": args.control},
           "layers": rows, "summary": {("bias" if b else "no_bias"): summary([r for r in rows if r["bias"] is b])
                                       for b in (True, False)}}
    path = Path(args.out or f"benchmarks/data/linear-layers{'-grad' if args.grad else ''}-{gpu_tag(gpu)}.json")
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out["summary"], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
