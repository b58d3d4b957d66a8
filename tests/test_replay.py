"""The replay backend: recorded answers come back unchanged, unrecorded configs are never
best, the same seed replays the same trial sequence, and nothing writes into the dataset."""
import hashlib

import pytest
from click.testing import CliRunner

from autotune import store
from autotune.backends.outcome import OK, UNRECORDED
from autotune.backends.replay import OVERHEAD_S, WARMUP_RUNS, ReplayBackend, trial_seconds
from autotune.cli import cli
from autotune.errors import AutotuneError
from autotune.families import NAIVE, TILED
from autotune.search.loop import run_search
from autotune.space import Limits, valid_configs
from tests.fakes import FakeBackend, fake_ms


@pytest.fixture
def dataset(tmp_path):
    """A recorded database: every valid naive config and 30 tiled ones, from the fake GPU."""
    path = tmp_path / "recorded.sqlite"
    db = store.open_db(path)
    run_search(db, FakeBackend(), [NAIVE], Limits(), sampler="grid", trials=1000)
    run_search(db, FakeBackend(), [TILED], Limits(), sampler="grid", trials=30)
    db.close()
    return path


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_recorded_outcomes_come_back_unchanged(dataset):
    backend = ReplayBackend(dataset, (256, 256, 256))
    config = valid_configs(NAIVE)[0]
    outcome = backend.measure(config, "")
    assert outcome.status == OK and outcome.timing.median_ms == fake_ms(config)
    assert backend.provenance["gpu_uuid"] == "fake-uuid" and backend.recorded_backend == "fake"
    assert backend.simulated_s == pytest.approx(OVERHEAD_S + (5 + WARMUP_RUNS) * fake_ms(config) / 1000)


def test_unrecorded_configs_have_their_own_status(dataset):
    backend = ReplayBackend(dataset, (256, 256, 256))
    config = valid_configs(TILED)[-1]
    assert config.name not in backend.rows
    outcome = backend.measure(config, "")
    assert outcome.status == UNRECORDED and "not in the recorded dataset" in outcome.reason
    assert trial_seconds({**outcome.row(), "status": outcome.status}) == OVERHEAD_S


def test_a_replayed_search_never_makes_an_unrecorded_or_wrong_config_best(dataset, db):
    backend = ReplayBackend(dataset, (256, 256, 256))
    result = run_search(db, backend, [NAIVE, TILED], Limits(), sampler="random", trials=60, seed=2)
    assert result.statuses.get(UNRECORDED), "random sampling must hit configs the dataset lacks"
    best = store.best(db, backend.shape, backend="replay")
    assert best["status"] == OK and best["kernel"] in backend.rows
    assert backend.rows[best["kernel"]]["status"] == OK


@pytest.mark.parametrize("sampler", ["tpe", "random"])
def test_same_seed_same_trial_sequence(dataset, tmp_path, sampler):
    sequences = []
    for run in range(2):
        backend = ReplayBackend(dataset, (256, 256, 256))
        db = store.open_db(tmp_path / f"{sampler}{run}.sqlite")
        run_search(db, backend, [NAIVE, TILED], Limits(), sampler=sampler, trials=25, seed=7)
        sequences.append([r["kernel"] for r in db.query(
            "select r.kernel from trials t join results r on r.id = t.result_id order by t.id")])
    assert sequences[0] == sequences[1] and len(sequences[0]) >= 25


def test_errors_are_one_line(tmp_path, dataset):
    with pytest.raises(AutotuneError, match="does not exist"):
        ReplayBackend(tmp_path / "missing.sqlite", (256, 256, 256))
    with pytest.raises(AutotuneError, match="no recorded results for 512x512x512"):
        ReplayBackend(dataset, (512, 512, 512))


def test_cli_search_replays_without_touching_the_dataset(dataset, tmp_path):
    before = digest(dataset)
    out = tmp_path / "replay.sqlite"
    args = ["search", "--M", "256", "--backend", "replay", "--replay-db", str(dataset), "--db", str(out),
            "--family", "naive", "--sampler", "grid", "--trials", "5"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert "5 new measurements" in result.output
    assert digest(dataset) == before
    same = CliRunner().invoke(cli, args[:-2] + ["--db", str(dataset)])  # never write into the dataset
    assert same.exit_code == 2 and "same file" in same.output
    missing = CliRunner().invoke(cli, ["search", "--M", "256", "--backend", "replay", "--db", str(out)])
    assert missing.exit_code == 2 and "--replay-db" in missing.output


def test_rows_recorded_before_a_parameter_existed_keep_their_meaning():
    """A blocked row from before BSWAP existed (no column) is the BSWAP=0 kernel of today."""
    from autotune.backends.replay import current_name
    from autotune.families import FAMILIES
    from autotune.space import make_config

    old = make_config(FAMILIES["blocked"], {"BSWAP": 0})
    row = {k: v for k, v in old.values.items() if k != "BSWAP"}
    row.update(family="blocked", kernel=old.name.replace("_BSW0", ""))
    assert current_name(row) == old.name
    new = make_config(FAMILIES["blocked"], {"BSWAP": 1})
    assert current_name({**row, "BSWAP": 1, "kernel": new.name}) == new.name  # recorded with it: as stored
    naive = {"family": "naive", "kernel": "sgemm_naive_x", "bx": 8}  # nothing missing that has an `absent`
    assert current_name(naive) == "sgemm_naive_x"
