"""Probe: where autotune.torch.Linear's one-row training step loses its few per cent to nn.Linear's
(linear_layers.py --grad reads 0.958-0.973 where every layer runs F.linear). Host us a call (host_us: wall clock
around calls back to back, the runs in turn) of four layers holding the same parameters, forward alone with
autograd on, and forward then backward:

- nn: torch.nn.Linear;
- at: autotune.torch.Linear;
- sub: a subclass of nn.Linear whose forward is nn.Linear's (what being a subclass costs);
- flin: a subclass whose forward calls F.linear after autotune.torch.Linear's checks (x.is_cuda, the width,
  autocast, compiling), without the layer's memo of the dispatcher's answer.

    python benchmarks/profiling/linear_grad_probe.py [-o FILE]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parents[1]))
from cuda_events import host_lines  # noqa: E402

import autotune.torch as at  # noqa: E402
from autotune.torch.ops import autocasting  # noqa: E402

SHAPES = [(1, 160, 1112), (1, 4096, 4096), (1, 1024, 64)]  # (rows, out_features, in_features)


class Sub(torch.nn.Linear):
    pass


class Checked(torch.nn.Linear):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not (x.is_cuda and x.dim() > 0 and x.shape[-1] == self.in_features) or autocasting("cuda"):
            return torch.nn.functional.linear(x, self.weight, self.bias)
        if torch.compiler.is_compiling():
            raise RuntimeError("not traced here")
        return torch.nn.functional.linear(x, self.weight, self.bias)


def layers(out_features: int, in_features: int, bias: bool) -> dict[str, torch.nn.Linear]:
    nn = torch.nn.Linear(in_features, out_features, bias=bias, device="cuda")
    made = {"nn": nn}
    for name, kind in (("at", at.Linear), ("sub", Sub), ("flin", Checked)):
        layer = kind(in_features, out_features, bias=bias, device="cuda")
        layer.weight, layer.bias = nn.weight, nn.bias
        made[name] = layer
    return made


def cases(bias: bool):
    for rows, out_features, in_features in SHAPES:
        x = torch.randn(rows, in_features, device="cuda", requires_grad=True)
        g = torch.randn(rows, out_features, device="cuda")
        made = layers(out_features, in_features, bias)

        def forward(layer, x=x):
            return lambda: layer(x)

        def step(layer, x=x, g=g):
            return lambda: layer(x).backward(g)

        yield (rows, out_features, in_features, "bias" if bias else "no bias", "forward"), \
            {k: forward(v) for k, v in made.items()}
        yield (rows, out_features, in_features, "bias" if bias else "no bias", "step"), \
            {k: step(v) for k, v in made.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--out")
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    header = (f"linear_grad_probe: host us a call, {torch.cuda.get_device_name()}, torch {torch.__version__}; "
              "nn.Linear, autotune.torch.Linear, a bare subclass, a subclass with the layer's checks")
    host_lines(torch, header, [c for bias in (False, True) for c in cases(bias)], args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
