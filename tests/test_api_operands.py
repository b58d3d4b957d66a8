"""autotune.load()'s matmul with cuBLAS-style operands, without a GPU (the fake launcher of
test_api): alpha and beta, leading dimensions and strided batches run a BLAS=1 kernel with exactly
the call's arguments (BLAS_ARGS), plain calls keep the plain kernels, the dispatcher's order for
BLAS=1 (recorded BLAS=1 row, else a plain row's tiling, else the default), what stays refused, and
the precision a loader admits."""
from __future__ import annotations

import pytest

import autotune
from autotune import store
from autotune.errors import AutotuneError
from autotune.space import BLAS_ARGS
from tests.fakes import GPU
from tests.names import tags
from tests.test_api import DeviceArray, refused
from tests.test_starts import record

SMALL = {"BM": 32, "BN": 32, "BK": 8, "WM": 16, "WN": 32, "WNITER": 1, "TM": 2, "TN": 4}
SHAPE = (64, 64, 32)
PA, PB, PC = 0x100000, 0x200000, 0x300000  # 1 MiB apart: operands that never share memory


def arguments(call: dict) -> dict:
    """The launch's arguments by their BLAS_ARGS names."""
    return dict(zip((name for name, _ in BLAS_ARGS), (*call["ptrs"], *call["shape"], *call["ops"].scalars())))


def test_a_plain_call_keeps_the_plain_signature(mm, launcher):
    mm(DeviceArray((33, 17), PA), DeviceArray((17, 9), PB), out=DeviceArray((33, 9), PC), alpha=1.0, beta=0.0)
    [call] = launcher.launches
    assert call["ops"] is None and "BLAS" not in call["kernel"]


def test_alpha_beta_and_leading_dimensions_are_passed_as_they_lie(mm, launcher):
    # A: 33x17 rows of a 20-column matrix; B transposed (9x17) in a 24-column one; C in a 12-column one
    a, b = DeviceArray((33, 17), PA, strides=(20, 1)), DeviceArray((9, 17), PB, strides=(24, 1))
    c = DeviceArray((33, 9), PC, strides=(12, 1))
    assert mm(a, b, out=c, alpha=0.5, beta=2.0, trans_b=True) is c
    [call] = launcher.launches
    assert {"TB1", "RT1", "BLAS1"} <= tags(call["kernel"]) and call["launch"].grid[2] == 1  # NT's default: RT=1
    assert arguments(call) == {"A": PA, "B": PB, "C": PC, "M": 33, "N": 9, "K": 17, "lda": 20, "ldb": 24, "ldc": 12,
                               "alpha": 0.5, "beta": 2.0, "strideA": 0, "strideB": 0, "strideC": 0}
    mm(DeviceArray((33, 17), PA), DeviceArray((17, 9), PB), out=DeviceArray((33, 9), PC), alpha=-1.0)
    assert arguments(launcher.launches[-1])["alpha"] == -1.0  # alpha alone: tight operands, BLAS=1 still


def test_a_strided_batch_runs_one_launch_with_the_batches_on_grid_z(mm, launcher):
    M, N, K = SHAPE
    a = DeviceArray((3, M, K), PA, strides=(M * K + 8, K, 1))  # a gap between the batches
    b = DeviceArray((K, N), PB)  # 2-D: every batch shares it
    c = DeviceArray((3, M, N), PC)
    mm(a, b, out=c)
    [call] = launcher.launches
    assert arguments(call) == {"A": PA, "B": PB, "C": PC, "M": M, "N": N, "K": K, "lda": K, "ldb": N, "ldc": N,
                               "alpha": 1.0, "beta": 0.0, "strideA": M * K + 8, "strideB": 0, "strideC": M * N}
    plain = mm.choose(*SHAPE).config.geometry(M, N)
    assert call["launch"].grid == (*plain.grid[:2], 3) and "BLAS1" in tags(call["kernel"])
    one = DeviceArray((1, M, K), PA)  # a batch of one, tight: the plain kernel
    mm(one, b, out=DeviceArray((1, M, N), PC))
    assert launcher.launches[-1]["ops"] is None


def test_what_stays_unsupported_is_refused_in_one_line_before_anything_runs(mm, launcher):
    M, N, K = SHAPE
    a3, b = DeviceArray((3, M, K), PA), DeviceArray((K, N), PB)
    assert "beta=1 reads C: pass out=" in refused(mm, DeviceArray((M, K), PA), b, beta=1.0)
    assert f"out is {M}x{N} but the product is 3x{M}x{N}" in refused(mm, a3, b, out=DeviceArray((M, N), PC))
    assert "the batch counts differ (A has 3, B has 2, out has 3)" in refused(mm, a3, DeviceArray((2, K, N), PB),
                                                                     out=DeviceArray((3, M, N), PC))
    overlap = DeviceArray((3, M, N), PC, strides=(N, N, 1))  # the batches' outputs overlap
    assert "strideC=64 makes the batches' outputs overlap" in refused(mm, a3, b, out=overlap)
    backwards = DeviceArray((3, M, K), PA, strides=(-M * K, K, 1))
    assert "A has a negative batch stride" in refused(mm, backwards, b, out=DeviceArray((3, M, N), PC))
    assert "must be a 2-D matrix or a 3-D batch" in refused(mm, DeviceArray((1, 3, M, K), PA), b)
    assert launcher.launches == [] and launcher.loads == []


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """At SHAPE on GPU: a plain NN row; a BLAS=1 NN row of another tiling; a plain NT row only;
    a faster tensor-core (tf32x3) row."""
    path = tmp_path_factory.mktemp("blas") / "r.sqlite"
    db = store.open_db(path)
    kw = {"backend": "cuda", "gpu": GPU}
    names = {"plain": record(db, SHAPE, "blocked", 2.0, **kw, **SMALL),
             "blas": record(db, SHAPE, "blocked", 3.0, BLAS=1, **kw, **{**SMALL, "TN": 2}),
             "nt": record(db, SHAPE, "blocked", 2.0, TB=1, **kw, **{**SMALL, "STAGES": 1}),
             "tc": record(db, SHAPE, "tf32x3", 0.5, **kw)}
    db.close()
    return path, names


def test_blas_calls_take_the_blas_row_else_a_plain_rows_tiling_else_the_default(recorded, launcher):
    path, k = recorded
    mm = autotune.load(db=str(path), launcher=launcher, library=False)
    assert mm.choose(*SHAPE, blas=True).kernel == k["blas"]  # slower than the plain row, but the signature's
    tiling = mm.choose(*SHAPE, trans_b=True, batch=4)  # no BLAS=1 NT row: the NT row's tile, BLAS=1, no prologue
    assert "PB1" in tags(k["nt"]) and tags(tiling.kernel) == tags(k["nt"]) - {"PB1"} | {"BLAS1"} and tiling.origin == "exact tiling" and "tiling of result" in tiling.describe()
    assert mm.choose(*SHAPE, trans_a=True, blas=True).origin == "default"  # nothing TN recorded
    a, b, c = DeviceArray((SHAPE[0], SHAPE[2]), PA), DeviceArray((SHAPE[2], SHAPE[1]), PB), DeviceArray(SHAPE[:2], PC)
    mm(a, b, out=c, beta=0.5)
    assert launcher.launches[-1]["kernel"] == f"loaded {k['blas']}"


def test_tensor_core_rows_run_only_when_that_precision_is_asked_for(recorded, launcher):
    path, k = recorded
    assert autotune.load(db=str(path), launcher=launcher, library=False).choose(*SHAPE).kernel == k["plain"]
    assert autotune.load(db=str(path), launcher=launcher, precision="fp32-tc",
                         library=False).choose(*SHAPE).kernel == k["tc"]
    with pytest.raises(AutotuneError, match="unknown precision 'tf32'"):
        autotune.load(db=str(path), launcher=launcher, precision="tf32")



def test_a_plain_row_with_c_staged_lends_a_blas_call_its_tile_storing_c_directly(tmp_path, launcher):
    """CS=1 stages the plain signature's C only: the BLAS=1 tiling of such a row drops it, as it drops a
    prologue, and stays a valid config."""
    from autotune.space import violations

    path = tmp_path / "cs.sqlite"
    db = store.open_db(path)
    staged = record(db, SHAPE, "blocked", 2.0, TA=1, CS=1, backend="cuda", gpu=GPU, **SMALL)
    db.close()
    mm = autotune.load(db=str(path), launcher=launcher, library=False)
    assert "CS1" in tags(staged)
    tiling = mm.choose(*SHAPE, trans_a=True, blas=True)
    assert tiling.origin == "exact tiling" and tags(tiling.kernel) == tags(staged) - {"CS1"} | {"BLAS1"}
    assert tiling.config is not None and not violations(tiling.config)
