"""Tune the matrix product of an nn.Linear, then run its forward pass with the kernel found,
checked and timed against torch.matmul (FP32, TF32 off).

    python examples/pytorch_linear.py --batch 4096 --features 4096 --out-features 4096 --trials 40

An nn.Linear computes y = x @ W.T (+ bias; this one has none): M = batch, N = out_features,
K = in_features. This example runs the NN kernels, the ones measured on a GPU so far: W.T is
passed as a row-major copy, W.t().contiguous(), made once per weight update (here once) and
timed on its own line below rather than hidden in the product's time. (Kernels that read B
transposed, TB=1, i.e. mm(x, W, trans_b=True), pass the emulator but are not yet measured on a GPU.)
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
        autotune.tune(M, N, K, db=args.db, trials=args.trials, timeout=args.timeout)
    mm = autotune.load(db=args.db)

    layer = torch.nn.Linear(K, N, bias=False, device="cuda")
    x = torch.randn(M, K, device="cuda")
    with torch.no_grad():
        w_t = layer.weight.t().contiguous()  # K x N row-major: what the kernel reads as B
        y = mm(x, w_t)
        ref = layer(x)
        error = float(torch.linalg.norm((y - ref).double()) / torch.linalg.norm(ref.double()))
        out = torch.empty_like(ref)
        ours = time_ms(lambda: mm(x, w_t, out=out))
        theirs = time_ms(lambda: torch.matmul(x, layer.weight.t(), out=out))
        copy = time_ms(lambda: layer.weight.t().contiguous())

    flops = 2.0 * M * N * K
    print(f"nn.Linear({K}, {N}) on a batch of {M}, {torch.cuda.get_device_name()}, FP32 (TF32 off)")
    print(f"kernel: {mm.choose(M, N, K, torch.cuda.current_device()).describe()}")
    print(f"relative error against the layer's own forward: {error:.2e}")
    print(f"autotune:           {ours:.3f} ms  {flops / ours / 1e9:.2f} TFLOP/s  ({theirs / ours:.1%} of torch's speed)")
    print(f"torch.matmul(x, W.T): {theirs:.3f} ms  {flops / theirs / 1e9:.2f} TFLOP/s")
    print(f"W.t().contiguous(): {copy:.3f} ms, once per weight update (not in the line above)")


if __name__ == "__main__":
    main()
