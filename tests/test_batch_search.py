"""`autotune search --batch B` (autotune.tune(batch=B)) on the emulator: only BLAS=1 kernels are
searched, each measured as a strided batch of B products; rows store the batch count and the key
that reuses rows includes it (a row from before the column reads as one batch)."""
from __future__ import annotations

import pytest

import autotune
from autotune import store
from autotune.errors import AutotuneError
from autotune.families import BLOCKED, TILED
from autotune.families.layouts import for_batch, narrow_to
from tests.test_starts import record

SHAPE = (32, 32, 16)
SMALL = {"BM": ["32"], "BN": ["32"], "BK": ["8"], "WM": ["16"], "WN": ["32"], "WNITER": ["1"], "TM": ["2"],
         "TN": ["2", "4"], "STAGES": ["1", "2"], "ASYNC": ["0"], "GM": ["1"], "MINB": ["1"], "BSWAP": ["0"], "RT": ["0"],
         "BLAS": ["1"]}  # every proposal valid: each row is a measured one


@pytest.fixture(scope="module")
def searched(tmp_path_factory):
    path = tmp_path_factory.mktemp("batch") / "r.sqlite"
    [small] = narrow_to([BLOCKED], SMALL)
    result = autotune.tune(*SHAPE, family=[small, TILED], db=str(path), backend="sim", batch=3, trials=2,
                            sampler="random")
    return path, result


def test_a_batched_search_measures_blas_kernels_and_stores_the_batch(searched):
    path, result = searched
    assert result.status == 0
    rows = list(store.results(store.open_readonly(path), SHAPE, "sim"))
    assert rows and all(r["batch"] == 3 and r["BLAS"] == 1 and r["family"] == "blocked" for r in rows)
    assert all(r["status"] == "ok" for r in rows)


def test_the_key_includes_the_batch_and_old_rows_are_one_batch(searched, tmp_path):
    path, _ = searched
    db = store.open_db(path)
    [row] = list(store.results(db, SHAPE, "sim"))[:1]
    assert store.find_key(db, store.key_of(row)) is not None
    assert store.find_key(db, store.key_of({**row, "batch": 1})) is None  # a batch of one is another measurement
    assert list(store.results(db, SHAPE, "sim", batch=1)) == []
    old = store.open_db(tmp_path / "old.sqlite")
    record(old, SHAPE, "tiled", 1.0, T=8)  # written without a batch
    [plain] = list(store.results(old, SHAPE, "fake"))
    assert plain["batch"] is None and store.key_of(plain)[5] == 1
    assert store.find_key(old, store.key_of(plain)) is not None
    assert [r["id"] for r in store.results(old, SHAPE, "fake", batch=1)] == [plain["id"]]


def test_a_file_from_before_batches_gains_the_column(tmp_path):
    path = tmp_path / "old.sqlite"
    db = store.open_db(path)
    record(db, SHAPE, "tiled", 1.0, T=8)
    for index in [i.name for i in db.table("results").indexes if "batch" in i.columns]:
        db.execute(f"DROP INDEX [{index}]")
    db.execute("ALTER TABLE results DROP COLUMN batch")
    db.execute("ALTER TABLE claims RENAME TO claims_old")
    db.execute("CREATE TABLE claims AS SELECT backend, gpu_name, M, N, K, kernel, source_hash, owner, host, pid, "
               "expires, created_at FROM claims_old")
    db.execute("DROP TABLE claims_old")
    db.close()
    db = store.open_db(path)
    assert "batch" in db.table("results").columns_dict and "batch" in db.table("claims").columns_dict
    [row] = list(store.results(db, SHAPE, "fake"))
    assert store.find_key(db, store.key_of(row)) is not None


def test_a_batch_needs_a_family_with_blas_kernels():
    with pytest.raises(AutotuneError, match="--batch 2 needs BLAS=1 kernels"):
        for_batch([TILED], 2)
    [blocked] = for_batch([BLOCKED, TILED], 2)
    assert blocked.param("BLAS").values == (1,)
    assert for_batch([TILED], 1) == [TILED]


def test_the_emulator_measures_the_whole_batch():
    from autotune.backends.outcome import OK, WRONG
    from autotune.backends.sim.backend import SimBackend
    from autotune.codegen.render import render
    from autotune.space import make_config

    config = make_config(BLOCKED, {k: v[0] for k, v in SMALL.items()})
    backend = SimBackend(*SHAPE, batch=3)
    assert backend.measure(config, render(config)).status == OK
    one_batch = render(config).replace("C += blockIdx.z * strideC;", "")  # every batch writes batch 0's C
    assert backend.measure(config, one_batch).status == WRONG


def test_rates_count_every_product_of_the_batch(searched):
    path, _ = searched
    M, N, K = SHAPE
    for r in store.results(store.open_readonly(path), SHAPE, "sim"):
        assert r["tflops"] == pytest.approx(2 * M * N * K * 3 / r["time_ms"] / 1e9)
