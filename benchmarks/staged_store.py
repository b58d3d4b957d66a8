"""blocked's CS=1 (C stored through shared memory where its rows are not 16-byte aligned) against CS=0, the
same tile otherwise, each verified and timed by the CUDA backend (as `autotune measure` does) with cuBLAS
timed in the same process: at the misaligned host-bound shapes where the scalar stores cost most (C large
beside A and B), at their aligned twins (where CS changes nothing: the check that it costs nothing there),
and at larger odd shapes.

    python benchmarks/staged_store.py --commit <sources> -o benchmarks/data/staged-store-h200.json

Output: {"device", "commit", "rows": [{"M", "N", "K", "tile", "cs0_ms", "cs1_ms", "cublas_ms", "cs0_status",
"cs1_status"}]}: cs0_ms / cs1_ms is CS=1's gain.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from autotune.codegen.render import render  # noqa: E402
from autotune.families import BLOCKED  # noqa: E402
from autotune.space import make_config, shape_violations, violations  # noqa: E402

# the misaligned host-bound shapes whose best rows took 2-3x their aligned twins' (h200-host-bound*.sqlite.gz),
# those twins, and odd shapes of more work
SHAPES = ((4096, 1023, 16), (4096, 1024, 16), (16384, 63, 64), (16384, 64, 64), (1024, 1023, 64),
          (1024, 1024, 64), (4096, 255, 63), (1024, 255, 255), (4097, 4095, 4093), (2048, 2047, 512))
# the tiles the host-bound rows won with, and the default
TILES = {
    "64x64 TM2": {"BM": 64, "BN": 64, "BK": 8, "WM": 32, "WN": 32, "WNITER": 1, "TM": 2, "TN": 4},
    "64x64 WNI4": {"BM": 64, "BN": 64, "BK": 16, "WM": 32, "WN": 64, "WNITER": 4, "TM": 2, "TN": 4, "BSWAP": 0, "ORDER": 1},
    "32x128": {"BM": 32, "BN": 128, "BK": 8, "WM": 32, "WN": 64, "WNITER": 1, "TM": 8, "TN": 4},
    "default": {},
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--commit", default="", help="the sources' commit, recorded in the output")
    args = ap.parse_args()
    from autotune.backends.cuda.backend import CudaBackend

    rows = []
    for M, N, K in SHAPES:
        backend = CudaBackend(M, N, K)
        assert backend.baseline is not None  # the CUDA backend always times cuBLAS
        for tile, values in TILES.items():
            row: dict = {"M": M, "N": N, "K": K, "tile": tile, "cublas_ms": backend.baseline.median_ms}
            for cs in (0, 1):
                config = make_config(BLOCKED, {**values, "CS": cs})
                if violations(config) or shape_violations(config, M, N, backend.limits):
                    row[f"cs{cs}_status"] = "refused"
                    continue
                outcome = backend.measure(config, render(config, backend.limits))
                row[f"cs{cs}_status"] = outcome.status
                row[f"cs{cs}_ms"] = outcome.timing.median_ms if outcome.timing else None
            rows.append(row)
            gain = (f"{row['cs0_ms'] / row['cs1_ms']:.3f}" if row.get("cs0_ms") and row.get("cs1_ms") else "-")
            print(f"{M}x{N}x{K} {tile:>10}: CS=0 {row.get('cs0_ms')} CS=1 {row.get('cs1_ms')} gain {gain} "
                  f"(cuBLAS {row['cublas_ms']:.4f} ms; {row.get('cs0_status')}/{row.get('cs1_status')})", flush=True)
    import torch

    out = {"device": torch.cuda.get_device_name(), "commit": args.commit, "rows": rows}
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
