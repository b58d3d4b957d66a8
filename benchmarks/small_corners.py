"""Rows at the small host-bound lattice's corners (benchmarks/host-bound-small-shapes.toml, written by
scripts/host_bound_shapes.py --small), measured in one process: at each corner cuBLAS is timed (the baseline
row), then a few kernels that take a plain torch call's short way there (api.dispatch.takes_short_way) are
verified and timed, each recorded as a search records it (search.measure.evaluate), failures included.

    python benchmarks/small_corners.py --db corners.sqlite [--shapes benchmarks/host-bound-small-shapes.toml] [--backend sim]

Why not `autotune cover`: each product's search there costs about 1.5 s before its trials (its backend built
at the shape, cuBLAS timed, a study opened; 2.5 s when cover started a worker per product, whose 300 s budget
over the lattice's 207 corners timed 120 baselines and no kernel: H100, 47356a1). Here one process holds the GPU, each kernel is compiled once (its source does not depend on the shape), and a
corner costs its baselines and its kernels' runs. A kernel that breaks the CUDA context stops the run after
its row is recorded, as an in-process search does.

The kernels: the default of each plain FP32 family quick at small products, fitted to the corner (a search's
first trial), blocked at four small tiles without a prologue (misaligned rows of A and B read as the aligned pairs
that hold them, MA/MB; misaligned rows of C stored plainly and through shared memory, CS), where K is long splitk at
three small tiles (SPLIT_TILES), tall at four (TALL_TILES), and skinny's fit in its own split count and the two
beside it (SKINNY_SPLIT_STEPS), reading misaligned rows of B plainly and as pairs (SKINNY_PAIRS); those that take
the short way there. --families limits them to some of the families (splitk: its default and its small tiles).
"""
from __future__ import annotations

import argparse
import itertools
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from autotune import store  # noqa: E402
from autotune.api.commands import record_baseline  # noqa: E402
from autotune.api.dispatch import takes_short_way  # noqa: E402
from autotune.api.suite import read_shapes  # noqa: E402
from autotune.backends.child import WorkerSpec, build_backend  # noqa: E402
from autotune.errors import AutotuneError, SpaceError  # noqa: E402
from autotune.families import FAMILIES  # noqa: E402
from autotune.families.skinny import SPLITS as SPLITS_SKINNY  # noqa: E402
from autotune.families.splitk import LONG_K, SPLIT_TILE, SPLITS  # noqa: E402
from autotune.search.measure import evaluate  # noqa: E402
from autotune.space import Config, Limits, fitted, make_config, shape_violations, violations  # noqa: E402

# the plain FP32 families quick at small products (naive and tiled are slower everywhere; tailsplit and
# streamk are for shapes of a wave of tiles or more)
FAMILY_NAMES = ("blocked", "splitk", "skinny", "tall")
# blocked without a prologue at small tiles: (BM, BN, BK, WM, WN, WNITER, TM, TN); where N % 4 != 0 each also with C's
# sub-tiles stored through shared memory (CS=1, where TN allows it): at the shallow corners of odd N the tiles storing
# C a float at a time (CS=0) beat cuBLAS within 11 us at none of 136 on the H200, and at 4096x1023x16 the 64 x 64
# tile took 12.2 us with CS=1 against 18.2 without (docs/host-bound.md)
SMALL_TILES = [(32, 32, 8, 16, 32, 1, 2, 4), (32, 64, 16, 16, 32, 1, 4, 4), (64, 32, 16, 32, 16, 1, 4, 2),
               (64, 64, 16, 32, 32, 1, 4, 4)]
# Where K is long, splitk at small tiles with a long K step: each block's k-loop is a few steps and the splits sum in
# the last block to arrive (RED=1). On an H100 (benchmarks/data/splitk-small-tiles-h100.txt) the 32 x 64 tile with
# BK=32 in 4 or 16 splits took 9.3-10.3 us at 1024x64x511, 128x512x511 and 64x128x4096, where cuBLAS took 10.0-11.7
# and the kernels the lattice's first pass tried (above, and the families' defaults) 13-22 on the H200.
SPLIT_TILES = [(32, 64), (32, 32), (64, 32)]  # (BM, BN), the rest of splitk's SPLIT_TILE: warps of 16 x 32
SPLIT_CHUNK = (96, 384)  # the K of each split: the measured best were 128 and 256
# tall at its own corners (scripts/host_bound_shapes.py --tall), A through registers (ST=0) and 8 lanes a row: (ROWS,
# NR at most, KT), each with one split and with the fit's. On an H100 (benchmarks/data/tall-short-k-h100.sqlite.gz)
# the fastest at 16384x16x256, 16384x15x255, 8192x31x255 and 4096x16x1024 were the first three, in one split:
# 10.3-12.4 us, cuBLAS 10.8-17.1; the fourth is the default's tile.
TALL_TILES = [(4, 16, 128), (2, 16, 128), (4, 4, 128), (2, 16, 64)]
# skinny at the wide corners (scripts/host_bound_shapes.py --wide): its fit sizes SPLITK to fill the SMs, which at a
# few microseconds' work is a guess between more blocks and a longer chain of partial sums; the counts beside the
# fit's (powers of two) are tried too. At 16 rows on the H200 the fit's row took 13.3 us at 16x4096x1024, 8.8 at
# 16x16384x256 (the shipped database), around the 11 us within which a row covers smaller calls.
SKINNY_SPLIT_STEPS = (-1, 0, 1)
# Where N % 4 != 0 the fit reads B a float at a time (MB=0): at the wide corners of odd N its rows took 13.5-18.3 us on
# the H200, none within 11. MB=1 reads the aligned float4s that hold a lane's four values, through registers (SB=0),
# with A still staged (SA=1) where its buffers fit static shared memory and from global memory (SA=0) where not.
SKINNY_PAIRS = ({"MB": 1, "SB": 0}, {"MB": 1, "SB": 0, "SA": 0})


def candidates(shape: tuple[int, int, int], limits: Limits, families: tuple[str, ...] = FAMILY_NAMES) -> list[Config]:
    """The kernels of these families tried at a corner: those that launch there and take the short way, each once."""
    found: dict[str, Config] = {}
    for name in families:
        family = FAMILIES[name]
        options = [fitted(make_config(family, {}), shape, limits)]
        if name == "blocked":
            stores = (0, 1) if shape[1] % 4 else (0,)  # CS=1 where C's rows are misaligned (SMALL_TILES)
            for (BM, BN, BK, WM, WN, WNITER, TM, TN), CS in itertools.product(SMALL_TILES, stores):
                given = dict(BM=BM, BN=BN, BK=BK, WM=WM, WN=WN, WNITER=WNITER, TM=TM, TN=TN, AL=0,
                             MA=int(shape[2] % 4 != 0), MB=int(shape[1] % 4 != 0), CS=CS)
                try:
                    options.append(make_config(family, given))
                except SpaceError:
                    continue
        if name == "splitk":
            options += split_tiles(family, shape)
        if name == "tall":
            options += tall_tiles(family, shape, limits)
        if name == "skinny":
            options += skinny_splits(family, shape, limits)
        for config in options:
            if (not violations(config) and not shape_violations(config, shape[0], shape[1])
                    and takes_short_way(config, shape)):
                found.setdefault(config.name, config)
    return list(found.values())


def split_tiles(family, shape: tuple[int, int, int]) -> list[Config]:
    """splitk's small tiles at a corner of long K (SPLIT_TILES), in each split count whose chunk of K is SPLIT_CHUNK."""
    K = shape[2]
    if K < LONG_K:
        return []
    low, high = SPLIT_CHUNK
    return [make_config(family, {**SPLIT_TILE, "BM": BM, "BN": BN, "SPLITK": splits, "RED": 1})
            for (BM, BN), splits in itertools.product(SPLIT_TILES, SPLITS) if low <= K / splits <= high]


def tall_tiles(family, shape: tuple[int, int, int], limits: Limits) -> list[Config]:
    """tall's TALL_TILES at a corner, NR cut to the columns there are, in one split and in the fit's."""
    found = []
    for rows, columns, kt in TALL_TILES:
        given = {"THREADS": 256, "LANES": 8, "ROWS": rows, "KT": kt, "ST": 0}
        fit = fitted(make_config(family, given), shape, limits, given).values
        for splits in sorted({1, fit["SPLITK"]}):
            try:
                found.append(make_config(family, {**fit, "NR": min(columns, fit["NR"]), "SPLITK": splits}))
            except SpaceError:
                continue
    return found


def skinny_splits(family, shape: tuple[int, int, int], limits: Limits) -> list[Config]:
    """skinny's fit at a corner in the split counts SKINNY_SPLIT_STEPS away from its own (the sums through the
    workspace, RED, wherever the count splits K at all and the fit's slices allow it; the constraints refuse the rest),
    and where N % 4 != 0 each also reading B's rows as the aligned pairs that hold them (SKINNY_PAIRS)."""
    fit = fitted(make_config(family, {}), shape, limits).values
    at = SPLITS_SKINNY.index(fit["SPLITK"])
    found = []
    for step in SKINNY_SPLIT_STEPS:
        if 0 <= at + step < len(SPLITS_SKINNY):
            splits = SPLITS_SKINNY[at + step]
            given = {**fit, "SPLITK": splits, "RED": int(splits > 1 and fit["KW"] > 1)}
            pairs = [{**given, **reads} for reads in SKINNY_PAIRS] if shape[1] % 4 else []
            for values in [given, *pairs]:
                try:
                    found.append(make_config(family, values))
                except SpaceError:
                    continue
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", default="benchmarks/host-bound-small-shapes.toml")
    parser.add_argument("--db", required=True, help="results database to write (created)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--budget", type=float, default=400, help="seconds: no corner is started after this")
    parser.add_argument("--backend", default="cuda", help="cuda, or sim: the emulator, for a check without a GPU")
    parser.add_argument("--families", default=",".join(FAMILY_NAMES), help="the families tried, comma-separated")
    args = parser.parse_args()
    families = tuple(f.strip() for f in args.families.split(",") if f.strip())
    unknown = [f for f in families if f not in FAMILY_NAMES]
    if unknown or not families:
        print(f"small_corners.py: --families {args.families!r}: choose from {', '.join(FAMILY_NAMES)}", file=sys.stderr)
        sys.exit(2)
    try:
        shapes = [s.shape for s in read_shapes(args.shapes)]
        measure(shapes, args, families)
    except AutotuneError as exc:  # no device, a bad database path, a shape too large for the GPU: one line
        print(f"small_corners.py: {exc}", file=sys.stderr)
        sys.exit(2)


def measure(shapes: list[tuple[int, int, int]], args: argparse.Namespace, families: tuple[str, ...]) -> None:
    db = None  # opened once the first corner's backend stands: a machine without a GPU writes nothing
    started = time.monotonic()
    for i, shape in enumerate(shapes, 1):
        if time.monotonic() - started > args.budget:
            print(f"budget of {args.budget:g} s spent after {i - 1} of {len(shapes)} corners", flush=True)
            break
        backend = build_backend(WorkerSpec(args.backend, shape, args.seed))
        if db is None:
            db = store.open_db(args.db)
        if backend.baseline:  # the emulator times no cuBLAS
            record_baseline(db, backend)
        best = None
        for config in candidates(shape, backend.limits, families):
            done = evaluate(db, backend, config, backend.limits, backend.peak_tflops)
            row = done.row if done else {}
            if row.get("status") == "ok" and (best is None or row["time_ms"] < best["time_ms"]):
                best = row
        cublas_us = backend.baseline.median_ms * 1e3 if backend.baseline else float("nan")
        ours = f"{best['time_ms'] * 1e3:6.2f} us {best['kernel']}" if best else "no kernel verified"
        print(f"[{i}/{len(shapes)} {time.monotonic() - started:5.0f} s] {shape}: cuBLAS {cublas_us:6.2f} us, "
              f"fastest {ours}", flush=True)


if __name__ == "__main__":
    main()
