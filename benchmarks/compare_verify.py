"""Compare two `autotune verify --json` outputs (e.g. the emulator's and the GPU's):
the same variants and shapes must get the same status.

    python benchmarks/compare_verify.py sim.json cuda.json
"""
import json
import sys


def load(path: str) -> dict:
    return {(r["config"], tuple(r["shape"])): r["status"] for r in json.load(open(path))}


def main(a_path: str, b_path: str) -> int:
    a, b = load(a_path), load(b_path)
    common = set(a) & set(b)
    differ = sorted(k for k in common if a[k] != b[k])
    print(f"{len(common)} (variant, shape) pairs in both; {len(common) - len(differ)} agree, {len(differ)} differ; "
          f"only in {a_path}: {len(set(a) - set(b))}, only in {b_path}: {len(set(b) - set(a))}")
    for k in differ:
        print(f"  {k[0]} {'x'.join(map(str, k[1]))}: {a[k]} vs {b[k]}")
    return 1 if differ or set(a) != set(b) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
