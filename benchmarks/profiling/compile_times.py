"""NVRTC compile time (CPU only, no GPU) of each family's default and random valid configs.

Each compile runs in its own forked process, killed at --cap seconds, so that one pathological
kernel cannot stall the run. The cubin cache is bypassed (codegen.nvrtc._nvrtc): every time is
a cold compile. Prints one line per compile as it goes, then the slowest ones; --csv keeps all.

    PYTHONPATH=$PWD python benchmarks/profiling/compile_times.py --per-family 30 --cap 60 \
        --families tiled,blocked,splitk,tailsplit,skinny,tall --csv compile_times.csv
"""
from __future__ import annotations

import argparse
import csv
import multiprocessing as mp
import random
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from autotune.codegen.nvrtc import CompileError, _nvrtc, nvrtc_version
from autotune.codegen.render import render
from autotune.families import FAMILIES
from autotune.space import Config, make_config, random_valid


def _child(conn, source: str, name: str, arch: str) -> None:
    start = time.perf_counter()
    try:
        _nvrtc(source, name, arch)
        ok = "ok"
    except CompileError:
        ok = "error"
    conn.send((ok, time.perf_counter() - start))


def timed_compile(source: str, name: str, arch: str, cap: float) -> tuple[str, float]:
    """("ok" | "error" | "timeout", seconds) for one cold compile in a process of its own."""
    ctx = mp.get_context("fork")  # the parent runs no threads of its own when it forks (see main)
    mine, theirs = ctx.Pipe()
    proc = ctx.Process(target=_child, args=(theirs, source, name, arch))
    start = time.perf_counter()
    proc.start()
    if mine.poll(cap):
        result = mine.recv()
    else:
        proc.kill()
        result = ("timeout", time.perf_counter() - start)
    proc.join()
    return result


def configs(families: list[str], per_family: int, seed: int) -> list[Config]:
    rng = random.Random(seed)
    out = []
    for name in families:
        family = FAMILIES[name]
        drawn = {make_config(family, {}).name: make_config(family, {})}
        for _ in range(per_family * 5):
            if len(drawn) > per_family:
                break
            config = random_valid(family, rng)
            if config is not None:
                drawn.setdefault(config.name, config)
        out.extend(drawn.values())
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--families", default="tiled,blocked,splitk,tailsplit,skinny,tall")
    ap.add_argument("--per-family", type=int, default=30, help="random valid configs per family (plus the default)")
    ap.add_argument("--cap", type=float, default=60.0, help="seconds a compile may take before it is killed")
    ap.add_argument("--jobs", type=int, default=1, help="compiles at once (each is one CPU core)")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--slow", type=float, default=20.0, help="seconds from which a compile is listed as slow")
    ap.add_argument("--csv", help="write every compile here")
    args = ap.parse_args()
    todo = configs(args.families.split(","), args.per_family, args.seed)
    print(f"NVRTC {nvrtc_version()}, {args.arch}, {len(todo)} configs, cap {args.cap:g} s", flush=True)

    def one(config: Config) -> dict:
        status, seconds = timed_compile(render(config), config.name, args.arch, args.cap)
        row = {"family": config.family.name, "kernel": config.name, "status": status,
               "seconds": round(seconds, 2), **config.values}
        print(f"{row['seconds']:7.2f} s  {status:7}  {config.name}", flush=True)
        return row

    with ThreadPoolExecutor(args.jobs) as pool:  # threads only wait on their forked child
        rows = list(pool.map(one, todo))
    if args.csv:
        keys = sorted({k for r in rows for k in r}, key=lambda k: (k not in ("family", "kernel", "status", "seconds"), k))
        with open(args.csv, "w", newline="") as fh:
            writer = csv.DictWriter(fh, keys)
            writer.writeheader()
            writer.writerows(rows)
    print("\nfamily      n  median_s  max_s  slow  timeout")
    for name in dict.fromkeys(r["family"] for r in rows):
        times = sorted(r["seconds"] for r in rows if r["family"] == name)
        slow = sum(t >= args.slow for t in times)
        timeouts = sum(r["status"] == "timeout" for r in rows if r["family"] == name)
        print(f"{name:10} {len(times):3} {times[len(times) // 2]:8.2f} {times[-1]:6.2f} {slow:5} {timeouts:8}")
    print(f"\nslow (>= {args.slow:g} s):")
    for r in sorted(rows, key=lambda r: -r["seconds"]):
        if r["seconds"] >= args.slow:
            print(f"{r['seconds']:7.2f} s  {r['status']:7}  {r['kernel']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
