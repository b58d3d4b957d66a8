"""GPU tests carry the `gpu` marker. They skip, with the reason, where no CUDA device
answers the driver; with AUTOTUNE_REQUIRE_GPU=1 (set on GPU hosts) that skip is a failure."""
import os

import pytest


def pytest_collection_modifyitems(config, items):
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
def db(tmp_path):
    from autotune import store

    return store.open_db(tmp_path / "test.sqlite")


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory, monkeypatch):
    # one cubin cache per test session, never the user's own
    monkeypatch.setenv("AUTOTUNE_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))
