"""The search loop on a fake backend: every trial is a row, failures are data, nothing is
measured twice, a wrong kernel is never best."""
import pytest

from autotune import store
from autotune.families import NAIVE, TILED
from autotune.search.loop import run_search
from autotune.space import Limits, valid_configs
from tests.fakes import FakeBackend


def search(db, backend, **kw):
    kw.setdefault("trials", 25)
    return run_search(db, backend, kw.pop("families", [NAIVE, TILED]), Limits(), seed=kw.pop("seed", 1), **kw)


@pytest.mark.parametrize("sampler", ["tpe", "random", "grid"])
def test_every_trial_is_a_row_and_new_measurements_are_counted(db, sampler):
    backend = FakeBackend()
    result = search(db, backend, sampler=sampler, trials=12)
    assert result.new == 12
    trials = list(db.query("select * from trials"))
    assert len(trials) == result.trials
    assert all(t["result_id"] for t in trials)
    assert db["results"].count_where("status != 'invalid'") == 12
    # GPU-side measurements are exactly the new non-invalid rows, never repeated
    assert len(backend.measured) == len(set(backend.measured))


def test_invalid_configs_become_rows_with_their_reason(db):
    search(db, FakeBackend(), sampler="random", trials=40)
    invalid = list(db.query("select * from results where status = 'invalid'"))
    assert invalid, "random sampling of this space must hit refused configs"
    assert all(r["reason"] and r["source_hash"] == "" for r in invalid)


def test_wrong_kernel_is_recorded_and_never_best(db):
    backend = FakeBackend()
    wrong = [c for c in valid_configs(TILED) if c.values["T"] == 64 and c.values["pad"] == 2]
    run_search(db, backend, [TILED], Limits(), sampler="grid", trials=len(valid_configs(TILED)))
    rows = {r["kernel"]: r for r in db.query("select * from results")}
    assert all(rows[c.name]["status"] == "wrong" for c in wrong)
    best = store.best(db, backend.shape, backend="fake")
    assert best["status"] == "ok" and best["kernel"] not in {c.name for c in wrong}
    fastest_ok = min(r["time_ms"] for r in rows.values() if r["status"] == "ok")
    assert best["time_ms"] == fastest_ok


def test_grid_covers_the_valid_space_once(db):
    backend = FakeBackend()
    result = run_search(db, backend, [NAIVE], Limits(), sampler="grid", trials=1000)
    assert result.new == len(valid_configs(NAIVE))
    assert sorted(backend.measured) == sorted(c.name for c in valid_configs(NAIVE))


def test_a_second_search_reuses_the_database(db):
    first = FakeBackend()
    run_search(db, first, [NAIVE], Limits(), sampler="grid", trials=100)  # 100 of naive's 132 valid configs
    second = FakeBackend()
    result = run_search(db, second, [NAIVE], Limits(), sampler="random", trials=5)
    assert not set(second.measured) & set(first.measured)  # those were answered from the database
    assert result.new == len(second.measured) == 5 and result.trials > result.new
    rows = db.query("select t.cached, r.status, r.kernel from trials t join results r on r.id = t.result_id "
                    "where t.study = ?", [result.study])
    assert all(r["kernel"] in first.measured for r in rows if r["cached"])


def test_a_search_of_a_space_the_database_has_whole_stops_at_once(db):
    run_search(db, FakeBackend(), [NAIVE], Limits(), sampler="grid", trials=1000)
    second = FakeBackend()
    result = run_search(db, second, [NAIVE], Limits(), sampler="random", trials=5)
    assert second.measured == [] and result.trials == 0 and result.exhausted  # nothing left to measure


def test_rows_carry_rates_and_provenance(db):
    search(db, FakeBackend(), sampler="tpe", trials=8)
    row = next(db.query("select * from results where status = 'ok' limit 1"))
    assert row["tflops"] > 0 and row["pct_cublas"] > 0 and row["cublas_ms"] == 0.5
    for key in ("gpu_name", "gpu_uuid", "nvrtc_version", "driver_version", "tool_version", "created_at",
                "source_hash", "template_hash"):
        assert row[key] not in (None, ""), key
    assert store.source(db, row["source_hash"]).startswith("// autotune kernel " + row["kernel"])


def test_tpe_finds_the_fast_region(db):
    backend = FakeBackend()
    result = search(db, backend, sampler="tpe", trials=60, families=[TILED])
    assert result.best["T"] >= 32  # the fake makes big tiles fast


def test_a_search_starts_from_each_familys_default(tmp_path):
    from autotune.space import make_config

    db = store.open_db(tmp_path / "r.sqlite")
    run_search(db, FakeBackend(), [NAIVE, TILED], Limits(), sampler="random", trials=3, seed=5)
    first = [r["kernel"] for r in db.query("SELECT r.kernel FROM trials t JOIN results r ON r.id = t.result_id "
                                           "ORDER BY t.id LIMIT 2")]
    assert first == [make_config(NAIVE, {}).name, make_config(TILED, {}).name]


def test_the_sampler_benchmark_can_leave_the_defaults_out(tmp_path):
    from autotune.space import make_config

    db = store.open_db(tmp_path / "r.sqlite")
    run_search(db, FakeBackend(), [TILED], Limits(), sampler="random", trials=3, seed=5, start_from_defaults=False)
    first = next(db.query("SELECT r.kernel FROM trials t JOIN results r ON r.id = t.result_id ORDER BY t.id LIMIT 1"))
    assert first["kernel"] != make_config(TILED, {}).name  # random's first draw, seed 5


def test_a_search_asking_more_trials_than_any_space_holds_walks_a_bounded_part_of_it(monkeypatch):
    """--trials 10**20 walked the blocked space whole (minutes, gigabytes, deaf to --timeout) to learn what was left."""
    from autotune.families import BLOCKED
    from autotune.search import left

    walked = []
    monkeypatch.setattr(left, "refusals", lambda backend, config, limits: walked.append(config) and [])
    unknown = left.Left.of([BLOCKED], FakeBackend(), Limits(), set(), 10 ** 20)
    assert len(walked) == left.KNOWN_AT_MOST + 1 and not unknown.exhausted and unknown.pick(lambda c: True) is None
    walked.clear()
    known = left.Left.of([NAIVE], FakeBackend(), Limits(), set(), 10 ** 20)  # small enough to know whole
    assert len(walked) == len(valid_configs(NAIVE)) and known.pick(lambda c: True) is not None


def test_a_grid_asking_more_trials_than_any_space_holds_enqueues_a_bounded_part_of_it():
    """--sampler grid --trials 10**20: islice refused the stop (a traceback), 10**7 enqueued the blocked space whole."""
    from autotune.families import BLOCKED
    from autotune.search import loop
    from autotune.search.left import KNOWN_AT_MOST

    class Study:
        def __init__(self):
            self.enqueued = 0

        def enqueue_trial(self, params, skip_if_exists=False):
            self.enqueued += 1

    study = Study()
    assert loop._enqueue_grid(study, [BLOCKED], Limits(), set(), 10 ** 20, False) == KNOWN_AT_MOST == study.enqueued
    assert loop._enqueue_grid(Study(), [NAIVE], Limits(), set(), 10 ** 20, False) == len(valid_configs(NAIVE))
