"""The rows the time model learns from, for the package to ship: every verified, timed row of one GPU model in
a results database (the H200 suite's, benchmarks/data/h200-suite.sqlite.gz), cut to what a fit reads (family,
parameters, shape, time), as gzip'd JSON. With them search.ranking orders the first trials of a search, a
cover or a first-use job by the model from the first shape on, where a new database alone holds too few rows.

    python scripts/ship_model_rows.py benchmarks/data/h200-suite.sqlite.gz "NVIDIA H200" \
        autotune/store/tuned/h200-model-rows.json.gz
"""
from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from autotune.explain.timemodel import measured, read_rows  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("database", help="results database (.sqlite or .sqlite.gz)")
    parser.add_argument("gpu", help="the GPU model whose rows are shipped, as the rows name it")
    parser.add_argument("out", help="the .json.gz to write")
    args = parser.parse_args()
    samples = measured(read_rows(args.database, args.gpu))  # the fastest of each (kernel, shape), as a fit takes it
    rows = [{"family": c.family.name, **c.values, "M": M, "N": N, "K": K, "time_ms": t}
            for c, (M, N, K), t in sorted(samples, key=lambda s: (s[1], s[0].name))]
    document = {"gpu_name": args.gpu, "source": Path(args.database).name, "rows": rows}
    # no time or file name in the gzip header: the same rows give the same bytes
    with open(args.out, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as f:
        f.write(json.dumps(document, separators=(",", ":")).encode())
    print(f"wrote {len(rows)} rows of {args.gpu} to {args.out} ({Path(args.out).stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
