"""Wall time per new trial of a search and where its new trials spent their time, from the
stage columns of the rows it wrote (and, given the search's output, its own wall time):

    python benchmarks/trial_breakdown.py DB [SEARCH_LOG]

Stages of a new trial (evaluate.py, cuda_backend.py), in order:
  t_render_s   render, the reuse lookup, the claim and the source row (search process)
  t_wait_s     compile-wait: for the compile-ahead pool's work on this kernel (pipeline.py)
  t_compile_s  NVRTC in the GPU worker: a cache hit when the pool finished first
  t_verify_s   load, and the check and main shapes against cuBLAS (compared on the GPU)
  t_time_s     warm-up and timed runs
  t_clock_s    the SM clock read (NVML; nvidia-smi where NVML fails)
  t_energy_s   the power burst after the timed runs (backends/cuda/energy.py; none without NVML)
  t_explain_s  explain-wait: SASS counts (from the pool) saved, and the model
  other        t_trial_s less the stages: the worker round trip, the row
"""
from __future__ import annotations

import re
import sqlite3
import statistics
import sys

STAGES = ("t_render_s", "t_wait_s", "t_compile_s", "t_verify_s", "t_time_s", "t_clock_s", "t_energy_s",
          "t_explain_s")
SUMMARY = re.compile(r"(\d+) trials, (\d+) new measurements.* in ([0-9.]+) s")


def column(rows: list[dict], name: str) -> list[float]:
    return sorted(r[name] for r in rows if r.get(name) is not None)


def line(label: str, values: list[float]) -> str:
    if not values:
        return f"  {label:<12} {'-':>7} {'-':>7} {'-':>7}"
    p90 = values[min(len(values) - 1, int(0.9 * len(values)))]
    return f"  {label:<12} {statistics.median(values):7.3f} {statistics.mean(values):7.3f} {p90:7.3f}"


def search_wall(log_path: str) -> tuple[int, int, float] | None:
    """(trials, new, seconds) from the search's summary line."""
    with open(log_path, errors="replace") as f:
        found = SUMMARY.search(f.read())
    return (int(found[1]), int(found[2]), float(found[3])) if found else None


def main(path: str, log_path: str | None = None) -> None:
    db = sqlite3.connect(path)
    db.row_factory = sqlite3.Row
    rows = [dict(r) for r in db.execute("select * from results where t_trial_s is not null")]
    if not rows:
        print("no new trials with stage columns")
        return
    ok = [r for r in rows if r["status"] == "ok"]
    wall = search_wall(log_path) if log_path else None
    if wall:
        trials, new, seconds = wall
        print(f"search: {new} new of {trials} trials in {seconds:.1f} s: {seconds / max(new, 1):.3f} s wall per new "
              f"trial; median t_trial_s {statistics.median(column(rows, 't_trial_s')):.3f} (all {len(rows)} new), "
              f"{statistics.median(column(ok, 't_trial_s')):.3f} (the {len(ok)} ok)")
    busy: dict[str, float] = {}
    for r in rows:  # how long each worker had a trial of its own in hand, against the search's wall
        busy[r["worker"]] = busy.get(r["worker"], 0.0) + r["t_trial_s"]
    share = f" = {sum(busy.values()) / (len(busy) * wall[2]):.0%} of {len(busy)} x the wall" if log_path and wall else ""
    print(f"trial seconds per worker: {', '.join(f'{w} {s:.1f}' for w, s in sorted(busy.items()))}{share}")
    families = {}
    for r in ok:
        families[r["family"]] = families.get(r["family"], 0) + 1
    print(f"{len(ok)} new ok trials ({', '.join(f'{k} {v}' for k, v in sorted(families.items()))}); "
          f"seconds per stage: median, mean, 90th percentile")
    for stage in STAGES:
        print(line(stage, column(ok, stage)))
    other = sorted(r["t_trial_s"] - sum(r.get(s) or 0.0 for s in STAGES) for r in ok)
    print(line("other", other))
    print(line("t_trial_s", column(ok, "t_trial_s")))
    for family in sorted(families):
        print(line(f"  {family}", column([r for r in ok if r["family"] == family], "t_trial_s")))


if __name__ == "__main__":
    main(*sys.argv[1:3])
