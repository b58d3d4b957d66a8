"""Covering rows against the shapes they cover: the kernel's time per call, calls queued back to back,
at the row's own shape and at shapes it covers (api.dispatch's covering rule), beside torch.matmul's.

    python benchmarks/covering_probe.py 144x10131x4,15782x11x12,1738x164x4 [-o covering-probe-h200.json]

"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import autotune

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cuda_events import paired_ms  # noqa: E402


def main() -> int:
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    mm = autotune.load()
    rows = []
    for text in sys.argv[1].split(","):
        shape = tuple(int(v) for v in text.split("x"))
        choice = mm.choose(*shape)
        for M, N, K in [shape] + ([choice.measured_at] if choice.measured_at else []):
            A, B = torch.randn(M, K, device="cuda"), torch.randn(K, N, device="cuda")
            mm(A, B)
            plan = next((p for p in mm._plans.values() if p.call.shape == (M, N, K)), None)
            t, o = paired_ms(torch, lambda: torch.matmul(A, B), lambda: mm(A, B), 200, 6)
            rows.append({"shape": [M, N, K], "kernel": mm.choose(M, N, K).describe(),
                         "prologue": plan is not None and plan.pre is not None,
                         "torch_us": round(t * 1e3, 2), "ours_us": round(o * 1e3, 2)})
            print(json.dumps(rows[-1]), flush=True)
    if len(sys.argv) > 3 and sys.argv[2] == "-o":
        Path(sys.argv[3]).write_text(json.dumps({"device": torch.cuda.get_device_name(), "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
