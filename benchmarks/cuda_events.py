"""Timing with CUDA events, shared by the benchmark scripts that compare against torch.matmul."""
from __future__ import annotations

import statistics
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable, Iterable


def time_ms(torch: Any, run: Callable[[], object], reps: int = 20, rounds: int = 5, warmup: int = 3) -> float:
    """Milliseconds per call: CUDA events around `reps` back-to-back calls on the current stream,
    after `warmup` calls; the best round's mean of `rounds`."""
    for _ in range(warmup):
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


def in_turn(round_: int, n: int = 2) -> range:
    """The order in which n calls take their turns in round `round_`: forward in even rounds, backward in odd
    ones (ABBA for two), so that over an even number of rounds each sits at the same mean position."""
    return range(n) if round_ % 2 == 0 else range(n - 1, -1, -1)


def paired_ms(torch: Any, first: Callable[[], object], second: Callable[[], object], reps: int = 20,
              rounds: int = 6, warmup: int = 3) -> tuple[float, float]:
    """time_ms of two calls measured in turn, round by round, in ABBA order (the order swapped each round),
    and the median round of each. A GPU's clocks drift while it is measured (from idle it boosts, then
    settles): the best round went to whichever ran first, and torch.matmul paired with itself measured
    0.2-5.4% faster first at six shapes on an H200 (best rounds of six: benchmarks/data/pairing-bias-h200.txt,
    benchmarks/profiling/pairing_bias.py). In ABBA order over an
    even number of rounds both calls' rounds sit at the same mean and median position, so a steady drift
    hits both alike (anyshape.py's "control" pairs a call with itself to show it)."""
    if rounds % 2:
        raise ValueError(f"rounds={rounds}: an even number, so that each call runs first as often as second")
    for _ in range(warmup):
        first()
        second()
    times: tuple[list[float], list[float]] = ([], [])
    for r in range(rounds):
        for i in in_turn(r):
            times[i].append(time_ms(torch, (first, second)[i], reps, 1, 0))
    return statistics.median(times[0]), statistics.median(times[1])


def per_call(torch: Any, run: Callable[[], object], n: int, warmup: int = 50) -> tuple[float, float]:
    """(host us, GPU us) a call over n calls back to back, after a warm-up: wall clock around the calls
    (no synchronisation inside) and CUDA events around the same calls, so the second is max(host, GPU)."""
    for _ in range(warmup):
        run()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    t = time.perf_counter()
    for _ in range(n):
        run()
    host = (time.perf_counter() - t) / n
    end.record()
    end.synchronize()
    return host * 1e6, start.elapsed_time(end) / n * 1e3


def host_us(torch: Any, runs: dict[str, Callable[[], object]], calls: int = 4000, chunk: int = 500,
            warmup: int = 100) -> dict[str, float]:
    """Host microseconds a call of each of `runs`: wall clock around `chunk` calls back to back, the runs taking
    turns chunk by chunk (in_turn), synchronised between chunks; the median chunk of calls // chunk each."""
    for run in runs.values():
        for _ in range(warmup):
            run()
    torch.cuda.synchronize()
    spent: dict[str, list[float]] = {k: [] for k in runs}
    names = list(runs)
    for c in range(calls // chunk):
        for i in in_turn(c, len(names)):
            start = time.perf_counter()
            for _ in range(chunk):
                runs[names[i]]()
            spent[names[i]].append((time.perf_counter() - start) / chunk * 1e6)
            torch.cuda.synchronize()
    return {k: round(statistics.median(v), 2) for k, v in spent.items()}


# host_us's stand-in for torch where the runs are on the CPU: nothing to wait for between chunks
CPU_CLOCK = SimpleNamespace(cuda=SimpleNamespace(synchronize=lambda: None))


def host_lines(clock: Any, header: str, cases: Iterable[tuple[tuple[int, ...], dict[str, Callable[[], object]]]],
               out: str | None) -> None:
    """A host probe's output: the header, then per case "(shape) {run: host us}" (host_us of 8,000 calls, the runs
    in turn; clock: torch, or CPU_CLOCK), each line printed as it comes and all written to `out` if given."""
    lines = [header]
    for shape, runs in cases:
        lines.append(f"{shape} {host_us(clock, runs, calls=8000)}")
        print(lines[-1], flush=True)
    if out:
        Path(out).write_text("\n".join(lines) + "\n")


def planned(first_step: type, torch: Any, A: Any, B: Any, trans_b: bool = False) -> Any:
    """An instance of a first step (api.fastcall's FastCall, or an older build's) whose table holds one call kind,
    A times B (Bᵀ with trans_b, B stored N x K), planned onto torch.mm; a call that would take the full path raises
    instead."""
    from autotune.api.shortcuts import to_torch

    class Planned(first_step):  # type: ignore[misc, valid-type]
        def _call(self, *args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("the probe's call took the full path")

    mm = Planned()
    mm._fast = {(A.shape, B.shape, False, trans_b, A.get_device()): to_torch(torch, False, trans_b)}
    return mm
