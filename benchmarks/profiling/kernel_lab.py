"""Kernel lab: template variants (knobs the template reads with a default, not yet search
parameters) side by side on one GPU, each verified and timed by the CUDA backend against
cuBLAS in the same process. With --sim, only checks them on the CPU emulator.

    python benchmarks/profiling/kernel_lab.py --M 4096 variants.json        # [{"label", "params", "knobs"}, ...]
    python benchmarks/profiling/kernel_lab.py --sim --M 67 variants.json

A knob that wins here becomes a parameter of the family (autotune/blocked.py).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from autotune.codegen.render import _env  # noqa: E402
from autotune.families import FAMILIES  # noqa: E402
from autotune.space import make_config, violations  # noqa: E402


def source_of(family: str, params: dict, knobs: dict) -> tuple:
    config = make_config(FAMILIES[family], {k: str(v) for k, v in params.items()})
    bad = violations(config)
    if bad:
        raise SystemExit(f"{config}: {bad[0]}")
    text = _env().get_template(config.family.template).render(name=config.name, **config.values, **knobs)
    return config, text


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("variants")
    ap.add_argument("--M", type=int, default=4096)
    ap.add_argument("--sim", action="store_true")
    ap.add_argument("--rounds", type=int, default=2, help="time every variant this many times, interleaved")
    args = ap.parse_args()
    variants = json.loads(Path(args.variants).read_text())
    if args.sim:
        from autotune.backends.sim.backend import SimBackend

        backend = SimBackend(args.M, args.M + 3, args.M - 5)
    else:
        from autotune.backends.cuda.backend import CudaBackend

        backend = CudaBackend(args.M, args.M, args.M)
    results: dict[str, list] = {}
    for round_ in range(1 if args.sim else args.rounds):
        for v in variants:
            config, text = source_of(v.get("family", "blocked"), v["params"], v.get("knobs", {}))
            out = backend.measure(config, text)
            ms = out.timing.median_ms if out.timing else None
            results.setdefault(v["label"], []).append(ms)
            regs = out.extra.get("num_regs") if out.extra else None
            print(f"round {round_} {v['label']:<40} {out.status:<8} {ms or 0:8.4f} ms regs {regs} {out.reason or ''}",
                  flush=True)
    if args.sim:
        return
    base = backend.baseline.median_ms
    print(f"\ncuBLAS {base:.4f} ms (start of run)")
    for label, times in results.items():
        good = [t for t in times if t]
        if good:
            best = min(good)
            print(f"{label:<40} best {best:.4f} ms  {100 * base / best:5.1f}% of cuBLAS  (rounds: "
                  + ", ".join(f"{t:.4f}" for t in good) + ")")


if __name__ == "__main__":
    main()
