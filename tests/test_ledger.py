"""Several hosts on one study: the ledger (autotune/ledger.py) shares claims and finished rows,
so no config is measured twice across hosts and each host's database gets every row it asked for.
Runs on an SQLite server stand-in here, and on PostgreSQL where AUTOTUNE_TEST_PG is set (CI)."""
import os
import threading

import pytest

from autotune import store
from autotune.families import NAIVE
from autotune.ledger import Ledger
from autotune.search import run_search
from autotune.space import Limits
from tests.fakes import FakeBackend

KEY = ("fake", "Fake GPU", 64, 64, 64, "sgemm_naive_xcols_bx32_by8", "abc")


def urls(tmp_path):
    out = [f"sqlite:///{tmp_path / 'server.sqlite'}"]
    if os.environ.get("AUTOTUNE_TEST_PG"):
        out.append(os.environ["AUTOTUNE_TEST_PG"])
    return out


def test_claim_finish_and_take_over(tmp_path):
    ledger = Ledger(f"sqlite:///{tmp_path / 'l.sqlite'}")
    a, b = store.Owner("host-a"), store.Owner("host-b")
    assert ledger.claim(KEY, a) == (store.MINE, None)
    assert ledger.claim(KEY, b) == (store.TAKEN, None)  # a live process holds it
    ledger.finish(KEY, {"kernel": "k", "tflops": 1.5})
    assert ledger.claim(KEY, b) == (store.DONE, {"kernel": "k", "tflops": 1.5})
    other = KEY[:-1] + ("def",)
    assert ledger.claim(other, a, ttl_s=-1) == (store.MINE, None)  # claimed, then killed: expired
    assert ledger.claim(other, b) == (store.MINE, None)  # taken over
    ledger.release(other, b)
    assert ledger.claim(other, a) == (store.MINE, None)


class Host(FakeBackend):
    """One host's GPU: records what it measured; a little slow, so the hosts overlap."""

    def measure(self, config, source):
        threading.Event().wait(0.01)
        return super().measure(config, source)


@pytest.mark.parametrize("which", [0, 1])
def test_two_hosts_measure_each_config_once(tmp_path, which):
    if which >= len(urls(tmp_path)):
        pytest.skip("AUTOTUNE_TEST_PG is not set: .ci/run starts a PostgreSQL server and sets it")
    url = urls(tmp_path)[which]
    study = f"two-hosts-{os.getpid()}-{which}-{tmp_path.name}"
    hosts = [(Host(64, 64, 64), tmp_path / f"host{i}.sqlite") for i in range(2)]
    errors = []

    def search(backend, path):
        try:
            run_search(store.open_db(path), backend, [NAIVE], Limits(), sampler="random", trials=25, seed=None,
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

    from autotune import search

    real, calls = optuna.storages.RDBStorage, []

    def flaky(url):
        calls.append(url)
        if len(calls) == 1:
            raise RuntimeError(message)
        return real(url)

    monkeypatch.setattr(optuna.storages, "RDBStorage", flaky)
    monkeypatch.setattr(search.time, "sleep", lambda s: None)
    assert search._rdb(f"sqlite:///{tmp_path / 's.sqlite'}") is not None and len(calls) == 2
    monkeypatch.setattr(optuna.storages, "RDBStorage", lambda url: (_ for _ in ()).throw(RuntimeError("no server")))
    with pytest.raises(RuntimeError, match="no server"):
        search._rdb("postgresql://nobody@127.0.0.1:1/x")
