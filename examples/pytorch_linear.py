"""Tune the matrix product of an nn.Linear, then run its forward pass with the kernel found,
checked and timed against torch.matmul (FP32, TF32 off).

    python examples/pytorch_linear.py --batch 4096 --features 4096 --out-features 4096 --trials 40

An nn.Linear computes y = x @ W.T (+ bias; this one has none): M = batch, N = out_features,
K = in_features. W (out_features x in_features, row-major) is read where it lies by kernels
that take B transposed (TB=1, cuBLAS's NT layout), so the search tunes that layout and the call
passes trans_b=True: no copy of W is made.
"""
from __future__ import annotations

import argparse

import torch

import autotune


def time_ms(run, reps: int = 20, rounds: int = 5) -> float:
    """Milliseconds per call (CUDA events around `reps` calls, best of `rounds`, after warm-up)."""
    for _ in range(3):
        run()
    best = float("inf")
    for _ in range(rounds):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(reps):
            run()
        end.record()
        end.synchronize()
        best = min(best, start.elapsed_time(end) / reps)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description="tune, load and check an nn.Linear's matrix product")
    parser.add_argument("--batch", type=int, default=4096)
    parser.add_argument("--features", type=int, default=4096, help="in_features (K)")
    parser.add_argument("--out-features", type=int, default=4096, help="out_features (N)")
    parser.add_argument("--trials", type=int, default=40, help="new configs the search measures")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds of search at most")
    parser.add_argument("--db", default="db/autotune.sqlite", help="results database (created by the search)")
    parser.add_argument("--no-tune", action="store_true", help="use what --db already holds")
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    M, N, K = args.batch, args.out_features, args.features

    if not args.no_tune:
        autotune.tune(M, N, K, db=args.db, trials=args.trials, timeout=args.timeout, layout="NT")
    mm = autotune.load(db=args.db)

    layer = torch.nn.Linear(K, N, bias=False, device="cuda")
    x = torch.randn(M, K, device="cuda")
    with torch.no_grad():
        w = layer.weight  # N x K row-major: B stored transposed
        y = mm(x, w, trans_b=True)
        ref = layer(x)
        error = float(torch.linalg.norm((y - ref).double()) / torch.linalg.norm(ref.double()))
        out = torch.empty_like(ref)
        ours = time_ms(lambda: mm(x, w, out=out, trans_b=True))
        theirs = time_ms(lambda: torch.matmul(x, w.t(), out=out))

    flops = 2.0 * M * N * K
    print(f"nn.Linear({K}, {N}) on a batch of {M}, {torch.cuda.get_device_name()}, FP32 (TF32 off)")
    print(f"kernel: {mm.choose(M, N, K, torch.cuda.current_device(), trans_b=True).describe()}")
    print(f"relative error against the layer's own forward: {error:.2e}")
    print(f"autotune:           {ours:.3f} ms  {flops / ours / 1e9:.2f} TFLOP/s  ({theirs / ours:.1%} of torch's speed)")
    print(f"torch.matmul(x, W.T): {theirs:.3f} ms  {flops / theirs / 1e9:.2f} TFLOP/s")


if __name__ == "__main__":
    main()
