"""Where a search's new trials spent their time, from the stage columns of its rows:
    python benchmarks/trial_breakdown.py DB"""
import sqlite3
import statistics
import sys

STAGES = ("t_compile_s", "t_verify_s", "t_time_s", "t_explain_s", "t_trial_s")


def main(path: str) -> None:
    db = sqlite3.connect(path)
    db.row_factory = sqlite3.Row
    rows = [r for r in db.execute("select * from results where status = 'ok' and t_trial_s is not null")]
    if not rows:
        print("no timed rows with stage columns")
        return
    print(f"{len(rows)} new ok trials; median / 90th percentile seconds per stage")
    for stage in STAGES:
        values = sorted(r[stage] for r in rows if r[stage] is not None)
        p90 = values[min(len(values) - 1, int(0.9 * len(values)))]
        print(f"  {stage:<12} {statistics.median(values):7.3f} {p90:7.3f}")
    stamps = [r[0] for r in db.execute("select t.created_at from trials t join results r on r.id = t.result_id "
                                       "where t.cached = 0 and r.status != 'invalid' order by t.id")]
    print(f"  rows written between {stamps[0]} and {stamps[-1]}" if stamps else "")


if __name__ == "__main__":
    main(sys.argv[1])
