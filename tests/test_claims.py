"""The claims contract (autotune/store/claims.py), run against every place that keeps claims:
the results file (one host's workers) and the database server of a shared study (several
hosts; an SQLite file stands in for the server here, PostgreSQL too where AUTOTUNE_TEST_PG is
set, as in CI). Then two hosts on one study: no config is measured twice across hosts, and
each host's database gets every row it asked for."""
import subprocess
import sys
import threading

import pytest

from autotune import store
from autotune.families import NAIVE
from autotune.search.loop import run_search
from autotune.space import Limits
from autotune.space.config import narrow
from tests.fakes import FakeBackend

KEY = ("fake", "Fake GPU", 64, 64, 64, 1, "sgemm_naive_xcols_bx32_by8", "abc")


def row_for(db, key):
    """A finished result row with this key (what a worker publishes)."""
    row = dict(zip(store.KEY, key)) | {"family": "naive", "status": "ok", "tflops": 1.5, "worker": "w"}
    stored, _ = store.record_result(db, row)
    return stored


def server_url(request, kind, tmp_path):
    """The claims server of this kind: an SQLite file, or a fresh schema on the PostgreSQL test server."""
    return request.getfixturevalue("pg_url") if kind == "postgresql" else f"sqlite:///{tmp_path / 'server.sqlite'}"


def make_claims(kind, tmp_path, request, ttl_s=store.CLAIM_TTL_S):
    if kind == "file":
        return store.FileClaims(store.open_db(tmp_path / "claims.sqlite"), ttl_s)
    return store.ServerClaims(server_url(request, kind, tmp_path), ttl_s)


def finish(claims, key, tmp_path):
    """Publish a row as a worker does: a file's row is the result row itself."""
    db = claims.db if isinstance(claims, store.FileClaims) else store.open_db(tmp_path / "host.sqlite")
    row = row_for(db, key)
    claims.finish(key, row)
    return row


KINDS = ["file", "server", "postgresql"]


@pytest.mark.parametrize("kind", KINDS)
def test_one_claim_at_a_time_then_the_finished_row(tmp_path, kind, request):
    claims = make_claims(kind, tmp_path, request)
    a, b = store.Owner("host-a", host="elsewhere", pid=1), store.Owner("host-b")
    assert claims.claim(KEY, a, "src").state == store.MINE
    assert claims.claim(KEY, b, "src").state == store.TAKEN  # a live claim held elsewhere
    row = finish(claims, KEY, tmp_path)
    done = claims.claim(KEY, b, "src")
    assert done.state == store.DONE and done.row["kernel"] == row["kernel"] and done.row["tflops"] == 1.5


@pytest.mark.parametrize("kind", KINDS)
def test_expired_and_dead_claims_are_taken_over_released_ones_are_free(tmp_path, kind, request):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    claims = make_claims(kind, tmp_path, request)
    me = store.Owner("me")
    assert claims.claim(KEY, store.Owner("killed", pid=int(dead.stdout)), "s").state == store.MINE
    assert claims.claim(KEY, me, "s").state == store.MINE  # same host, the pid is gone
    claims.release(KEY, me)
    assert claims.claim(KEY, store.Owner("other", host="elsewhere", pid=1), "s").state == store.MINE  # free again
    expiring = make_claims(kind, tmp_path / "x" if kind == "file" else tmp_path, request, ttl_s=-1)
    other = KEY[:-1] + ("def",)
    assert expiring.claim(other, store.Owner("gone", host="elsewhere", pid=1), "s").state == store.MINE
    assert claims.claim(other, me, "s").state == store.MINE  # expired: taken over


@pytest.mark.parametrize("kind", KINDS)
def test_a_failure_to_measure_again_is_claimed_anew_and_its_new_row_is_done(tmp_path, kind, request):
    # --remeasure failed (store.Redo): a failed row recorded before the search began is not DONE,
    # one worker measures it again, and the new row, beside the old one, is what the key answers
    claims = make_claims(kind, tmp_path, request)
    db = claims.db if isinstance(claims, store.FileClaims) else store.open_db(tmp_path / "host.sqlite")
    me, other = store.Owner("me"), store.Owner("other", host="elsewhere", pid=1)
    redo = store.Redo(("launch_error",), since="9999")  # every row so far is older than this search
    assert claims.claim(KEY, other, "s").state == store.MINE
    failed, _ = store.record_result(db, row_for_status(KEY, "launch_error"))
    claims.finish(KEY, failed)
    assert claims.claim(KEY, me, "s").state == store.DONE  # without --remeasure the failure is reused
    assert claims.claim(KEY, me, "s", redo).state == store.MINE
    assert claims.claim(KEY, other, "s", redo).state == store.TAKEN  # one worker measures it again
    again, inserted = store.record_result(db, row_for_status(KEY, "ok"), redo)
    claims.finish(KEY, again)
    assert inserted and again["id"] != failed["id"] and again["created_at"]
    done = claims.claim(KEY, other, "s", redo)
    assert done.state == store.DONE and done.row["id"] == again["id"] and done.row["status"] == "ok"
    assert store.find_key(db, KEY)["id"] == again["id"]  # the newest row of the key
    assert [r["status"] for r in db.query("select status from results order by id")] == ["launch_error", "ok"]


def row_for_status(key, status):
    return dict(zip(store.KEY, key)) | {"family": "naive", "status": status, "worker": "w"}


def test_a_row_finished_on_another_host_is_copied_with_its_source(tmp_path, request):
    server = make_claims("server", tmp_path, request)
    here = store.open_db(tmp_path / "here.sqlite")
    both = store.claims_for(here, server)
    assert both.claim(KEY, store.Owner("there", host="elsewhere", pid=1), "src").state == store.MINE
    finish(server, KEY, tmp_path)
    got = both.claim(KEY, store.Owner("me"), "the source")
    assert got.state == store.DONE and store.find_key(here, KEY)["id"] == got.row["id"]
    assert store.source(here, KEY[-1]) == "the source"


# Eight configs for 25 random trials a host: the hosts must propose each other's (in the whole naive
# space of 132 the two sets of 25 missed each other about once in a hundred runs, and copies was 0).
SMALL = narrow(NAIVE, {"bx": ["16", "32"], "by": ["8", "16"]})


class Host(FakeBackend):
    """One host's GPU: records what it measured; a little slow, so the hosts overlap."""

    def measure(self, config, source):
        threading.Event().wait(0.01)
        return super().measure(config, source)


@pytest.mark.parametrize("kind", ["server", "postgresql"])
def test_two_hosts_measure_each_config_once(tmp_path, kind, request):
    url = server_url(request, kind, tmp_path)
    study = "two-hosts"
    hosts = [(Host(64, 64, 64), tmp_path / f"host{i}.sqlite") for i in range(2)]
    errors = []

    def search(backend, path):
        try:
            run_search(store.open_db(path), backend, [SMALL], Limits(), sampler="random", trials=25, seed=None,
                       storage=url, study=study)
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=search, args=h) for h in hosts]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    measured = [name for backend, _ in hosts for name in backend.measured]
    assert len(measured) == len(set(measured))  # nothing measured twice across the hosts
    copies = 0
    for backend, path in hosts:
        rows = {r["kernel"]: r for r in store.open_db(path).query("select * from results where status != 'invalid'")}
        keys = list(store.open_db(path).query("select kernel, count(*) n from results group by " + ", ".join(store.KEY)))
        assert all(k["n"] == 1 for k in keys)  # one row per key in each host's database
        other = hosts[1][0] if backend is hosts[0][0] else hosts[0][0]
        copied = [k for k in rows if k not in backend.measured]
        assert all(k in other.measured for k in copied)  # a row not measured here came from the other host
        copies += len(copied)
    assert copies > 0  # the hosts did propose the same configs, and the second one copied instead


@pytest.mark.parametrize("message", [
    "(sqlite3.OperationalError) table studies already exists",
    "(sqlite3.IntegrityError) UNIQUE constraint failed: alembic_version.version_num",
    "(psycopg2.errors.UniqueViolation) duplicate key value violates unique constraint",
])
def test_a_worker_that_loses_the_schema_race_opens_the_storage(monkeypatch, tmp_path, message):
    """Two workers starting on a fresh storage race to create Optuna's tables; each way of
    losing (seen in CI with two threads on one SQLite file) is retried, anything else is not."""
    import optuna

    from autotune.search import study as search

    real, calls = optuna.storages.RDBStorage, []

    def flaky(url):
        calls.append(url)
        if len(calls) == 1:
            raise RuntimeError(message)
        return real(url)

    monkeypatch.setattr(optuna.storages, "RDBStorage", flaky)
    monkeypatch.setattr(store.claims.time, "sleep", lambda s: None)
    assert search._rdb(f"sqlite:///{tmp_path / 's.sqlite'}") is not None and len(calls) == 2
    monkeypatch.setattr(optuna.storages, "RDBStorage", lambda url: (_ for _ in ()).throw(RuntimeError("no server")))
    with pytest.raises(RuntimeError, match="no server"):
        search._rdb("postgresql://nobody@127.0.0.1:1/x")


@pytest.mark.parametrize("message", [
    "(psycopg.errors.DuplicateTable) relation \"autotune_ledger\" already exists",
    "(psycopg.errors.UniqueViolation) duplicate key value violates unique constraint \"pg_type_typname_nsp_index\"",
])
def test_a_host_that_loses_the_race_to_create_the_claims_table_uses_it(monkeypatch, tmp_path, message):
    """Two hosts starting on a fresh PostgreSQL server: CREATE TABLE IF NOT EXISTS is not atomic
    there, and the loser of the race sees one of these; it finds the table made and goes on."""
    real, calls = store.ServerClaims._create_table, []

    def flaky(self):
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError(message)
        real(self)

    monkeypatch.setattr(store.ServerClaims, "_create_table", flaky)
    monkeypatch.setattr(store.claims.time, "sleep", lambda s: None)
    claims = store.ServerClaims(f"sqlite:///{tmp_path / 'server.sqlite'}")
    assert len(calls) == 2 and claims.claim(KEY, store.Owner("me"), "s").state == store.MINE


def test_a_trial_another_process_told_first_is_passed_over():
    """Two hosts can pop one enqueued trial (SQLite cannot lock its row): the second to tell it can
    find it finished between writing its attributes and telling it, which is not an error."""
    import optuna

    from autotune.search.study import tell

    study = optuna.create_study(direction="maximize")
    trial = study.ask()
    late = optuna.trial.Trial(study, trial._trial_id)  # this host's handle, its attributes already written
    late.set_user_attr = lambda key, value: None
    study.tell(trial, 2.0)  # the other host tells it first
    tell(study, late, {"kernel": "k", "status": "ok", "id": 1, "time_ms": 1.0, "tflops": 1.0, "pct_cublas": 50.0})
    assert [t.value for t in study.trials] == [2.0]  # the first telling stands
