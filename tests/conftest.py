"""GPU tests carry the `gpu` marker. They skip, with the reason, where no CUDA device
answers the driver; with AUTOTUNE_REQUIRE_GPU=1 (set on GPU hosts) that skip is a failure."""
import fcntl
import os
import uuid

import pytest

# The files whose tests take longest (NVRTC and hipcc compiles, emulator sweeps) go first: under
# xdist a long file started last is the tail of the whole run on CI's two cores.
SLOW_FIRST = ("test_report.py", "test_compile.py", "test_hip.py", "test_sim.py", "test_claims.py",
              "test_user_search.py", "test_pipeline.py", "test_tf32x3wg.py")


def pytest_collection_modifyitems(config, items):
    items.sort(key=lambda item: SLOW_FIRST.index(item.path.name) if item.path.name in SLOW_FIRST else len(SLOW_FIRST))
    gpu_items = [item for item in items if "gpu" in item.keywords]
    if not gpu_items:
        return
    from autotune.backends.cuda.device import no_device_reason

    reason = no_device_reason()
    if reason is None:
        return
    if os.environ.get("AUTOTUNE_REQUIRE_GPU") == "1":
        for item in gpu_items:
            item.add_marker(pytest.mark.xfail(reason=f"AUTOTUNE_REQUIRE_GPU=1 but {reason}", run=False, strict=True))
        raise pytest.UsageError(f"AUTOTUNE_REQUIRE_GPU=1 but {reason}")
    for item in gpu_items:
        item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture
def launcher():
    """autotune.load()'s device side, faked: it records what the matmul asks (tests/fakes.py)."""
    from tests.fakes import FakeLauncher

    return FakeLauncher()


@pytest.fixture
def mm(launcher):
    """The matmul over the blocked defaults (no database), launching through the fake launcher."""
    import autotune

    return autotune.load(defaults_only=True, launcher=launcher)


@pytest.fixture
def db(tmp_path):
    from autotune import store

    return store.open_db(tmp_path / "test.sqlite")


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory, monkeypatch):
    # one cubin cache per test session, never the user's own
    monkeypatch.setenv("AUTOTUNE_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))
    # no build of api._aten started by a test's first torch call (api.aten_build): the tests that want it ask
    monkeypatch.setenv("AUTOTUNE_ATEN", "0")


@pytest.fixture
def pg_url():
    """The test PostgreSQL server (.ci/run starts one and exports AUTOTUNE_TEST_PG) on a schema of
    this test's own: the server outlives a test, and tests run side by side (pytest-xdist), so
    nothing another test left or is writing there (Optuna's tables, the claims ledger) can answer
    this one. Skips where no server is configured."""
    server = os.environ.get("AUTOTUNE_TEST_PG")
    if not server:
        pytest.skip("AUTOTUNE_TEST_PG is not set: no PostgreSQL server (.ci/run starts one and sets it)")
    import sqlalchemy as sa

    schema = f"t_{uuid.uuid4().hex[:16]}"
    engine = sa.create_engine(server)
    with engine.begin() as conn:
        conn.execute(sa.text(f"CREATE SCHEMA {schema}"))
    url = sa.engine.make_url(server).update_query_dict({"options": f"-csearch_path={schema}"})
    try:
        yield url.render_as_string(hide_password=False)
    finally:
        with engine.begin() as conn:
            conn.execute(sa.text(f"DROP SCHEMA {schema} CASCADE"))
        engine.dispose()


@pytest.fixture(autouse=True)
def _one_gpu_test_at_a_time(request, tmp_path_factory):
    """pytest-xdist (pyproject's addopts: a worker per core, a file's tests on one worker) would
    run GPU tests of different files at once; they time kernels, so they take turns on a lock
    in the folder all workers' temporary folders share."""
    if "gpu" not in request.keywords:
        yield
        return
    with open(tmp_path_factory.getbasetemp().parent / "autotune-gpu.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield
