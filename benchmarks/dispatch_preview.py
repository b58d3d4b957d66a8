"""Which of anyshape's random shapes load() would run on a tuned kernel, read offline from results databases
(no GPU, nothing timed): per seed, the shapes whose call the dispatcher (api.dispatch) gives a kernel, and why.

    python benchmarks/dispatch_preview.py --gpu "NVIDIA H200" --seeds 1-8 [--db merged.sqlite ...]

Without --db it reads the databases the package ships, as load() does with no database of its own. What a GPU
run of benchmarks/anyshape.py then measures at those shapes is the evidence; this says only where to look.
With --changed-from it prints one line instead: the seeds at which a choice differs between those databases and
--db's, the only seeds whose runs a merge can change (benchmarks/release/corners_ship_check.sh, SEEDS=changed):

    python benchmarks/dispatch_preview.py --gpu "NVIDIA H200" --seeds 1-10 --db merged.sqlite \
        --changed-from autotune/store/tuned/h200.sqlite
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from anyshape import random_shapes  # noqa: E402

from autotune import store  # noqa: E402
from autotune.api.dispatch import Dispatcher  # noqa: E402
from autotune.api.operands import Layout  # noqa: E402

PLAIN = Layout(False, False, False, 1)  # anyshape's random shapes: row-major A·B, a new output


def kernels_at(dispatcher: Dispatcher, gpu: str, seed: int, count: int) -> list[tuple[tuple[int, int, int], str]]:
    """(shape, the choice's description) of each drawn shape that would run a kernel, in draw order."""
    choices = ((shape, dispatcher.choose(gpu, shape, PLAIN)) for shape in random_shapes(seed, count))
    return [(shape, choice.describe()) for shape, choice in choices if not choice.library]


def changed(before: Dispatcher, after: Dispatcher, gpu: str, drawn: list[int], count: int) -> list[int]:
    """The seeds at which some random shape runs another kernel, or a kernel instead of cuBLAS or the reverse."""
    return [seed for seed in drawn if kernels_at(before, gpu, seed, count) != kernels_at(after, gpu, seed, count)]


def seeds(text: str) -> list[int]:
    """"1-8" or "1,3,5"."""
    if "-" in text:
        first, last = text.split("-")
        return list(range(int(first), int(last) + 1))
    return [int(s) for s in text.split(",")]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpu", required=True, help='the GPU model whose rows count, e.g. "NVIDIA H200"')
    parser.add_argument("--seeds", type=seeds, default=[1], help='"1-8" or "1,3,5" (default 1)')
    parser.add_argument("--count", type=int, default=40)
    parser.add_argument("--db", action="append", help="a results database (repeat; default: the shipped ones)")
    parser.add_argument("--changed-from", action="append", metavar="DB",
                        help="print only the seeds whose choices differ from these databases' (repeat)")
    args = parser.parse_args(argv)
    for path in [*(args.db or []), *(args.changed_from or [])]:
        if not Path(path).is_file():
            parser.error(f"{path}: no such database (give a results database's path)")
    dispatcher = Dispatcher(args.db or [str(p) for p in store.shipped_databases()])
    if args.changed_from:
        print(" ".join(map(str, changed(Dispatcher(args.changed_from), dispatcher, args.gpu, args.seeds, args.count))))
        return 0
    for seed in args.seeds:
        found = kernels_at(dispatcher, args.gpu, seed, args.count)
        print(f"seed {seed}: a kernel at {len(found)} of {args.count}")
        for (M, N, K), why in found:
            print(f"  {M}x{N}x{K}: {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
