"""Summarise Nsight Compute's per-instruction warp-state samples (benchmarks/profiling/ncu_source.sh):
stall reasons per issued instruction, which opcodes carry the dispatch stalls, and where in a
128-byte instruction-fetch block the dispatch and no-instruction stalls fall.

    python benchmarks/profiling/ncu_source_summary.py benchmarks/data/lab/s3-call2-src_lab_best.csv.gz ...
"""
from __future__ import annotations

import csv
import gzip
import io
import sys
from collections import Counter, defaultdict


def rows(path: str) -> list[dict[str, str]]:
    raw = gzip.open(path, "rt") if path.endswith(".gz") else open(path)
    lines = raw.read().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith('"Address"'))
    return list(csv.DictReader(io.StringIO("\n".join(lines[start:]))))


def number(text: str) -> float:
    try:
        return float(text.replace(",", ""))
    except ValueError:  # "-" for no data
        return 0.0


def opcode(source: str) -> str:
    words = source.split()
    word = words[1] if words and words[0].startswith("@") else (words[0] if words else "")
    return word.split(".")[0]


def summarise(path: str) -> None:
    data = rows(path)
    reasons = [k for k in data[0] if k.startswith("stall_") and "Not Issued" not in k]
    total = Counter({r: sum(number(d[r]) for d in data) for r in reasons})
    issued = total["stall_selected"] or 1
    print(f"{path}: {len(data)} instructions; samples per issued instruction:")
    print("  " + ", ".join(f"{r[6:]} {v / issued:.3f}" for r, v in total.most_common(8)))
    by_op: dict[str, float] = defaultdict(float)
    block: dict[int, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])  # dispatch, no_inst, count
    for d in data:
        by_op[opcode(d["Source"])] += number(d["stall_dispatch"])
        if number(d["Instructions Executed"]) > 0:
            slot = block[int(d["Address"], 16) % 128]
            slot[0] += number(d["stall_dispatch"])
            slot[1] += number(d["stall_no_inst"])
            slot[2] += 1
    top = sorted(by_op.items(), key=lambda kv: -kv[1])[:5]
    print("  dispatch stalls by opcode: " + ", ".join(f"{op} {v:.0f}" for op, v in top))
    print("  per executed instruction, by offset in its 128-byte fetch block (dispatch / no_inst):")
    print("  " + " ".join(f"{off:#04x}:{d / n:.0f}/{i / n:.0f}" for off, (d, i, n) in sorted(block.items())))


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        summarise(arg)
