"""A training step of a 4-layer MLP, torch.nn.Linear against autotune.torch.Linear (swap_linear on a copy
of the same model), FP32 with TF32 off: forward, backward and an SGD step, timed with CUDA events over
back-to-back steps; the two models' gradients after one step are compared. Writes a JSON.

    python benchmarks/train_mlp.py --db suite.sqlite --width 4096 --batch 4096 -o train-mlp.json
"""
from __future__ import annotations

import argparse
import copy
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cuda_events import time_ms  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", help="results database (default: autotune.load()'s)")
    parser.add_argument("--width", type=int, default=4096)
    parser.add_argument("--batch", type=int, default=4096)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("-o", "--out", default="benchmarks/data/train-mlp-h200.json")
    args = parser.parse_args()
    import torch

    import autotune.torch as at

    torch.backends.cuda.matmul.allow_tf32 = False
    at.use(db=args.db)
    torch.manual_seed(0)
    layers: list[torch.nn.Module] = []
    for _ in range(args.layers):
        layers += [torch.nn.Linear(args.width, args.width), torch.nn.ReLU()]
    plain = torch.nn.Sequential(*layers).cuda()
    ours = at.swap_linear(copy.deepcopy(plain))
    x = torch.randn(args.batch, args.width, device="cuda")

    def step(model, opt):
        opt.zero_grad(set_to_none=True)
        model(x).square().mean().backward()
        opt.step()

    optimizers = {id(m): torch.optim.SGD(m.parameters(), lr=1e-4) for m in (plain, ours)}
    for model in (plain, ours):  # one step each from the same weights: gradients compared
        model(x).square().mean().backward()
    worst = max(float(torch.linalg.norm((p.grad - q.grad).double()) / torch.linalg.norm(p.grad.double()))
                for p, q in zip(plain.parameters(), ours.parameters()))
    times = {name: time_ms(torch, lambda m=model: step(m, optimizers[id(m)]), 5, 5)
             for name, model in (("nn_linear_ms", plain), ("autotune_ms", ours))}
    out = {"device": torch.cuda.get_device_name(), "database": args.db, "width": args.width, "batch": args.batch,
           "layers": args.layers, **times, "speedup": times["nn_linear_ms"] / times["autotune_ms"],
           "worst_grad_rel_diff": worst,
           "products": [at.current().choose(args.batch, args.width, args.width, trans_b=True).describe()]}
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
