"""Time an exported kernel through its own Python launcher (best.py), as a user calls it on torch
tensors: CUDA events around back-to-back `launch` calls (prologue and workspace included), against the
time the search recorded (best.json's `measured`) and torch.matmul (TF32 off) in the same process.

    python benchmarks/export_time.py out/best.py [-o export-time.json]
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cuda_events import time_ms  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("launcher", help="the exported best.py")
    parser.add_argument("-o", "--out")
    args = parser.parse_args()
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    path = Path(args.launcher)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    best = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(best)
    manifest = json.loads(path.with_suffix(".json").read_text())
    M, N, K = (manifest["shape"][k] for k in "MNK")
    A, B = torch.randn(M, K, device="cuda"), torch.randn(K, N, device="cuda")
    C = torch.empty(M, N, device="cuda")
    stream = torch.cuda.current_stream().cuda_stream
    ours = time_ms(torch, lambda: best.launch(A, B, C, M, N, K, stream=stream), 10, 5)
    ref = A.double() @ B.double()
    error = float(torch.linalg.norm(C.double() - ref) / torch.linalg.norm(ref))
    theirs = time_ms(torch, lambda: torch.matmul(A, B), 10, 5)
    searched = (manifest.get("measured") or {}).get("time_ms")
    out = {"device": torch.cuda.get_device_name(), "kernel": manifest["kernel"], "M": M, "N": N, "K": K,
           "launcher_ms": ours, "searched_ms": searched, "torch_ms": theirs, "err_vs_float64": error,
           "launcher_over_searched": ours / searched if searched else None, "torch_over_launcher": theirs / ours}
    print(json.dumps(out, indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
