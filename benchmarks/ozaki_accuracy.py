"""How many moduli the Ozaki scheme II needs to be as accurate as FP32 SGEMM: the numpy reference
(autotune.families.ozaki_math) against numpy's float32 matmul (OpenBLAS SGEMM, FP32 arithmetic: the
CPU's stand-in; on the GPU the bar is cuBLAS SGEMM's error), both against float64, on the CPU.

    PYTHONPATH=. python benchmarks/ozaki_accuracy.py [--scale norm] [--out FILE]

For t = 3..8 moduli and each K, SIZE x SIZE x K products of two kinds of inputs, a few seeds each:
randn (standard normal) and wide (standard normal times 2^u per element, u uniform in
[-WIDE, WIDE]: a row's small values lose bits to its largest, the scheme's weakness). Two errors:
frob, the fp32-tc contract's ||C - C64||_F / ||C64||_F (backends.reference.relative_error), and
elem, max over outputs of |C - C64| / (|A|.|B|). Each is reported as a ratio to SGEMM's on the same
inputs (frob's SGEMM error floored at u = 2^-24, as the contract's judge does). The contract: the
frob ratio at most TC_FACTOR = 2 on every seed. Prints the markdown tables docs/ozaki.md holds.
--scale: step 1 by each row's and column's largest value (the kernels', ozaki-accuracy-cpu.json) or by its
norm (ozaki_math.SCALE_NORM, ozaki-accuracy-norm-cpu.json).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

# One BLAS thread, set before numpy loads OpenBLAS: on a host of two contended cores two threads ran
# these products 17x slower (0.34 against 0.02 s at 128 x 16384 x 128), and the sums are the same
# (OpenBLAS splits M and N among threads, not K: SGEMM's output was bit-identical with 1 and 2).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from autotune.backends.reference import (  # noqa: E402
    TC_FACTOR,
    UNIT_ROUNDOFF,
    abs_product,
    reference,
    relative_error,
)
from autotune.families.ozaki_math import SCALE_LARGEST, SCALE_NORM, bits, norm_bits, ozaki_matmul  # noqa: E402

TS = range(3, 9)
KS = (200, 256, 1024, 4096, 16384)
KINDS = ("randn", "wide")
SEEDS = (0, 1, 2)
SIZE = 256
WIDE = 20
COMMAND = "PYTHONPATH=. python benchmarks/ozaki_accuracy.py"
DATA = Path(__file__).resolve().parent / "data"
# --scale: (ozaki_math's scale, the default output, the command's flag)
SCALES = {"largest": (SCALE_LARGEST, DATA / "ozaki-accuracy-cpu.json", ""),
          "norm": (SCALE_NORM, DATA / "ozaki-accuracy-norm-cpu.json", " --scale norm")}


def operands(kind: str, K: int, seed: int, size: int = SIZE) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    A, B = rng.standard_normal((size, K)), rng.standard_normal((K, size))
    if kind == "wide":
        A *= 2.0 ** rng.uniform(-WIDE, WIDE, A.shape)
        B *= 2.0 ** rng.uniform(-WIDE, WIDE, B.shape)
    return A.astype(np.float32), B.astype(np.float32)


def errors(C: np.ndarray, ref: np.ndarray, scale: np.ndarray) -> tuple[float, float]:
    """(frob, elem) of C against the float64 product ref; scale = |A|.|B|."""
    elem = np.max(np.abs(C.astype(np.float64) - ref) / np.where(scale > 0, scale, 1.0))
    return relative_error(C, ref), float(elem)


def one_case(kind: str, K: int, seed: int, size: int, scale: int = SCALE_LARGEST) -> dict:
    """SGEMM's errors and each t's ratios to them, for one input."""
    A, B = operands(kind, K, seed, size)
    ref, abs_scale = reference(A, B), abs_product(A, B)
    frob_ref, elem_ref = errors(A @ B, ref, abs_scale)
    ratios = {}
    for t in TS:
        frob, elem = errors(ozaki_matmul(A, B, t, scale), ref, abs_scale)
        ratios[t] = (frob / max(frob_ref, UNIT_ROUNDOFF), elem / elem_ref if elem_ref > 0 else float("inf"))
    return {"sgemm": (frob_ref, elem_ref), "ratios": ratios}


def sig(x: float) -> float:
    return float(f"{x:.4g}")  # four figures: the JSON stays small and diffs stay readable


def first_meeting(frob_max: dict[int, float]) -> int | None:
    """The smallest t from which on every t meets the contract on every seed (None: none does)."""
    met = [t for t in TS if all(frob_max[u] <= TC_FACTOR for u in TS if u >= t)]
    return min(met) if met else None


def study(kind: str, K: int, seeds: tuple[int, ...], size: int, scale: int = SCALE_LARGEST) -> dict:
    cases = [one_case(kind, K, seed, size, scale) for seed in seeds]
    per_t = {}
    for t in TS:
        frob = [c["ratios"][t][0] for c in cases]
        elem = [c["ratios"][t][1] for c in cases]
        per_t[str(t)] = {"p": norm_bits(t) if scale == SCALE_NORM else bits(t, K), "frob_ratio": [sig(x) for x in frob], "elem_ratio": [sig(x) for x in elem]}
    frob_max = {t: max(per_t[str(t)]["frob_ratio"]) for t in TS}
    return {"inputs": kind, "K": K,
            "sgemm_frob": [sig(c["sgemm"][0]) for c in cases], "sgemm_elem": [sig(c["sgemm"][1]) for c in cases],
            "t": per_t, "first_t": first_meeting(frob_max)}


def cell(x: float) -> str:
    return f"{x:.2f}" if x < 10 else f"{x:.0f}" if x < 1e4 else f"{x:.0e}".replace("e+0", "e")


def markdown_tables(data: dict) -> str:
    """The tables docs/ozaki.md holds: p at each K, then median (max) over seeds of each ratio."""
    ts = [str(t) for t in TS]
    first = [row for row in data["results"] if row["inputs"] == data["results"][0]["inputs"]]
    heading = ("Bits of the norm's bound, q = norm_bits(t):\n" if data.get("scale") == "norm"
               else "Bits per operand, p = bits(t, K):\n")
    out = [heading, "| K | " + " | ".join(f"t={t}" for t in ts) + " |",
           "|--:|" + "--:|" * len(ts)]
    out += [f"| {row['K']} | " + " | ".join(str(row["t"][t]["p"]) for t in ts) + " |" for row in first]
    for key, title, last in (("frob_ratio", "Frobenius error / SGEMM's", " first t ≤ 2x |"),
                             ("elem_ratio", "largest error / (|A|.|B|), over SGEMM's", "")):
        out += ["", f"{title}, median (max) over seeds:\n"]
        out.append("| inputs | K | " + " | ".join(f"t={t}" for t in ts) + " |" + last)
        out.append("|---|--:|" + "--:|" * len(ts) + ("--:|" if last else ""))
        for row in data["results"]:
            cells = [f"{cell(statistics.median(v))} ({cell(max(v))})" for v in (row["t"][t][key] for t in ts)]
            tail = f" {row['first_t'] or 'none'} |" if last else ""
            out.append(f"| {row['inputs']} | {row['K']} | " + " | ".join(cells) + " |" + tail)
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scale", choices=sorted(SCALES), default="largest",
                    help="step 1 by each row's and column's largest value, or by its norm")
    ap.add_argument("--out", type=Path, help="default: benchmarks/data/ozaki-accuracy[-norm]-cpu.json")
    ap.add_argument("--size", type=int, default=SIZE, help="M = N")
    args = ap.parse_args(argv)
    scale, out, flag = SCALES[args.scale]
    out = args.out or out
    start = time.time()
    results = [study(kind, K, SEEDS, args.size, scale) for kind in KINDS for K in KS]
    data = {"command": COMMAND + flag, "scale": args.scale, "shape": f"{args.size} x {args.size} x K", "seeds": list(SEEDS),
            "wide_exponent": WIDE, "bar": "numpy float32 matmul (OpenBLAS SGEMM), CPU", "contract_factor": TC_FACTOR,
            "numpy": np.__version__, "results": results}
    out.write_text(json.dumps(data, indent=1) + "\n")
    print(markdown_tables(data))
    print(f"{time.time() - start:.0f} s; wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
