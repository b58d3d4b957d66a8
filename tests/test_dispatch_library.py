"""autotune.load()'s rule, without a GPU: cuBLAS computes every call unless a kernel measured at that
very shape beat cuBLAS timed beside it (by WIN_MARGIN), or one measured at a shape that holds the call's
in at most HOST_BOUND_MS; a nearer shape's row that does not hold it, however fast it was there, is no
evidence. Library calls go to the launcher's cuBLAS with the call's
operands as they lie."""
from __future__ import annotations

import pytest

import autotune
from autotune import store
from autotune.api.dispatch import HOST_BOUND_MS, HOST_SAVING_MS, WIN_MARGIN, beats_library, wins_at_its_shape
from autotune.api.operands import Layout
from autotune.families import FAMILIES
from autotune.space import make_config
from tests.fakes import GPU
from tests.test_api import DeviceArray
from tests.test_starts import record

SMALL = {"BM": 32, "BN": 32, "BK": 8, "WM": 16, "WN": 32, "WNITER": 1, "TM": 2, "TN": 4}


def timed(db, shape, family, ms, cublas_ms, cublas_layout="own", **params) -> str:
    """A row as a GPU search writes it, with cuBLAS's time beside its own (by default in its own layout;
    None: a row from before cuBLAS was timed per layout)."""
    name = record(db, shape, family, ms, backend="cuda", gpu=GPU, **params)
    own = ("T" if params.get("TA") else "N") + ("T" if params.get("TB") else "N")
    if "cublas_layout" not in db["results"].columns_dict:
        db["results"].add_column("cublas_layout", str)
    db.execute("UPDATE results SET cublas_ms = ?, cublas_layout = ? WHERE kernel = ? AND M = ? AND N = ? AND K = ?",
               [cublas_ms, own if cublas_layout == "own" else cublas_layout, name, *shape])
    return name


@pytest.fixture
def recorded(tmp_path):
    path = tmp_path / "r.sqlite"
    db = store.open_db(path)
    names = {
        "win": timed(db, (512, 512, 512), "blocked", 0.080, 0.100, **SMALL),
        "tie": timed(db, (1024, 512, 512), "blocked", 0.099, 0.100, **SMALL),  # within the margin: no evidence
        "tiny": timed(db, (64, 64, 64), "blocked", 0.005, 0.010, **SMALL),  # faster, and short: it covers
        "short": timed(db, (128, 2048, 64), "blocked", 0.007, 0.009, **SMALL),  # covers too, a larger shape
        "long": timed(db, (4096, 256, 64), "blocked", 0.020, 0.030, **SMALL),  # faster, too long to cover
        "nt": timed(db, (512, 512, 512), "blocked", 0.050, 0.100, TB=1, PB=0, **SMALL),
        # timed against cuBLAS's NN product, not its own layout's: no evidence
        "old_tn": timed(db, (512, 512, 512), "blocked", 0.050, 0.100, cublas_layout=None, TA=1, **SMALL),
        "tc": timed(db, (2048, 512, 512), "tf32x3", 0.050, 0.100),
        "fp32": timed(db, (2048, 512, 512), "blocked", 0.090, 0.100, **SMALL),
        # host-bound calls: slower than cuBLAS on the GPU by less than the short way saves the host, and by more
        "host_win": timed(db, (200, 200, 8), "blocked", 0.0068, 0.0055, **SMALL),
        "host_lose": timed(db, (300, 300, 8), "blocked", 0.0058 + HOST_SAVING_MS, 0.0055, **SMALL),
        "not_host_bound": timed(db, (400, 400, 8), "blocked", 0.0125, 0.0120, **SMALL),
        # host-bound and within the saving, or short enough to cover, but with a prologue: no short way
        "host_prologue": timed(db, (208, 208, 8), "blocked", 0.0060, 0.0055, AL=1, **SMALL),
        "cover_prologue": timed(db, (1024, 1024, 16), "blocked", 0.0080, 0.0100, AL=1, **SMALL),
        # measured at a shape "tiny" covers, and lost there
        "lost_inside": timed(db, (48, 48, 16), "blocked", 0.0065 + HOST_SAVING_MS, 0.0060, **SMALL),
    }
    db.close()
    return str(path), names


def test_a_row_is_evidence_only_past_the_margin():
    assert beats_library({"time_ms": 1.0, "cublas_ms": 1.0 / (1 - WIN_MARGIN) + 1e-9})
    assert not beats_library({"time_ms": 1.0, "cublas_ms": 1.0})
    assert beats_library({"time_ms": HOST_BOUND_MS / 2, "cublas_ms": HOST_BOUND_MS})  # host-bound: a faster kernel
    assert not beats_library({"time_ms": 1.0, "cublas_ms": None})  # a row timed without cuBLAS beside it
    assert not beats_library({"time_ms": 1.0, "cublas_ms": 2.0, "TB": 1, "cublas_layout": None})
    assert beats_library({"time_ms": 1.0, "cublas_ms": 2.0, "TB": 1, "cublas_layout": "NT"})


def test_at_a_host_bound_shape_a_row_wins_by_the_host_time_it_saves():
    bound = HOST_BOUND_MS

    def row(ms: float, cublas_ms: float, **more) -> dict:
        params = {k: v for k, v in more.items() if k != "cublas_layout"}
        values = make_config(FAMILIES["blocked"], {**SMALL, **params}).values
        return {"family": "blocked", "M": 200, "N": 200, "K": 8, **values, "time_ms": ms, "cublas_ms": cublas_ms,
                **more}

    assert wins_at_its_shape(row(bound, bound))  # level on the GPU: the host decides
    assert wins_at_its_shape(row(bound + HOST_SAVING_MS - 1e-6, bound))
    assert not wins_at_its_shape(row(bound + HOST_SAVING_MS + 1e-6, bound))
    assert not wins_at_its_shape(row(1.1 * bound, 1.1 * bound))  # not host-bound: the margin
    assert not wins_at_its_shape(row(bound, bound, TB=1, cublas_layout=None))
    assert not wins_at_its_shape(row(bound, bound, AL=1))  # a prologue: the call takes the full path
    assert not wins_at_its_shape(row(bound, bound, BLAS=1))  # the cuBLAS-style signature: the full path too
    assert not beats_library(row(bound, bound))  # no evidence at any other shape


def test_a_host_bound_row_runs_at_its_own_shape_and_covers_none(recorded, launcher):
    path, k = recorded
    mm = autotune.load(db=path, launcher=launcher)
    assert mm.choose(200, 200, 8).kernel == k["host_win"] and not mm.runs_library(200, 200, 8)
    # more than the saving; not host-bound; held by it; a prologue at its shape, and at one it would hold
    for shape in [(300, 300, 8), (400, 400, 8), (196, 196, 8), (208, 208, 8), (500, 500, 16)]:
        assert mm.choose(*shape).library and mm.runs_library(*shape), shape


def test_a_kernel_runs_only_where_it_beat_cublas_at_that_very_shape(recorded, launcher):
    path, k = recorded
    mm = autotune.load(db=path, launcher=launcher)
    assert mm.choose(512, 512, 512).kernel == k["win"] and mm.choose(512, 512, 512, trans_b=True).kernel == k["nt"]
    for shape in [(1024, 512, 512), (500, 512, 512), (4096, 4096, 4096)]:
        choice = mm.choose(*shape)
        assert choice.library and choice.describe().startswith("cuBLAS ("), shape
    assert "took 0.099 ms against cuBLAS's 0.1" in mm.choose(1024, 512, 512).describe()
    assert mm.choose(512, 512, 512, trans_a=True).library  # its TN row was timed against NN cuBLAS
    assert mm.runs_library(500, 512, 512) and not mm.runs_library(512, 512, 512)


def test_a_short_kernel_covers_the_shapes_its_shape_holds(recorded, launcher):
    path, k = recorded
    mm = autotune.load(db=path, launcher=launcher)
    assert mm.choose(64, 64, 64).origin == "exact"
    inside = mm.choose(60, 32, 16)  # held by both short rows: the smaller shape's kernel, the closer fit
    assert (inside.kernel, inside.origin, inside.measured_at) == (k["tiny"], "covering", (64, 64, 64))
    assert "covering: result" in inside.describe()
    assert mm.choose(100, 1000, 64).kernel == k["short"]
    assert not mm.runs_library(100, 1000, 64)
    # past a row's K or M; a 20 us row; B's rows of 1001 floats, not whole vectors as the row's were
    for shape in [(100, 1000, 65), (129, 100, 10), (4000, 200, 60), (100, 1001, 64)]:
        assert mm.choose(*shape).library and mm.runs_library(*shape), shape
    assert mm.choose(60, 32, 16, trans_b=True).library  # an NN row covers NN calls only
    # a row measured at the shape that lost is the evidence there, not one that covers it; and the short way
    # of a torch call (which asks runs_library) must agree, or the call takes the slow full path each time
    assert mm.choose(48, 48, 16).library and mm.dispatcher.runs_library(GPU, (48, 48, 16))
    assert mm.choose(60, 32, 16, blas=True).library  # nor calls of the cuBLAS-style signature


def test_a_tensor_core_row_runs_only_under_its_precision_and_where_it_beats_the_fp32_choice(recorded, launcher):
    path, k = recorded
    assert autotune.load(db=path, launcher=launcher).choose(2048, 512, 512).kernel == k["fp32"]
    assert autotune.load(db=path, launcher=launcher, precision="fp32-tc").choose(2048, 512, 512).kernel == k["tc"]


def test_library_calls_pass_the_operands_as_they_lie_to_cublas(recorded, launcher):
    path, _ = recorded
    mm = autotune.load(db=path, launcher=launcher)
    x, w, y = DeviceArray((300, 64), 0x100000), DeviceArray((80, 64), 0x200000), DeviceArray((300, 80), 0x300000)
    mm(x, w, out=y, trans_b=True, stream=5)
    call = launcher.launches[-1]
    assert (call["kernel"], call["ptrs"], call["stream"], call["shape"], call["trans"]) == (
        "cublas", (0x100000, 0x200000, 0x300000), 5, (300, 80, 64), (False, True))
    assert (call["ops"].lda, call["ops"].ldb, call["ops"].ldc, call["ops"].batch) == (64, 64, 80, 1)
    assert launcher.loads == []  # nothing compiled for a call cuBLAS computes
    mm(DeviceArray((300, 64), 0x100000, strides=(128, 1)), w, out=y, trans_b=True, alpha=2.0)
    assert launcher.launches[-1]["ops"].lda == 128 and launcher.launches[-1]["ops"].alpha == 2.0


def test_with_no_database_of_its_own_load_reads_the_tuned_database_the_package_ships(tmp_path, monkeypatch,
                                                                                     launcher):
    monkeypatch.chdir(tmp_path)  # no db/autotune.sqlite here
    monkeypatch.delenv("AUTOTUNE_DB", raising=False)
    for shipped in store.shipped_databases():  # one a GPU model, each of that model's rows only
        rows = list(store.open_readonly(shipped).query("SELECT * FROM results"))
        # each row one load() runs at its shape: faster than cuBLAS, or host-bound and made faster by the short way
        assert rows and all(r["status"] == "ok" and (r["time_ms"] < r["cublas_ms"] or wins_at_its_shape(r))
                            for r in rows)
        assert len({r["gpu_name"] for r in rows}) == 1
    on_h200 = autotune.load(launcher=launcher, gpu="NVIDIA H200")
    assert on_h200.choose(8192, 8192, 64).origin == "exact" and on_h200.choose(1000, 1000, 1000).library
    # each GPU model's rows run on that model only: 3499x340x18 is held by one of the H100's, none of the H200's;
    # 118x705x101 by rows of both (the small host-bound corners, measured on each)
    on_h100 = autotune.load(launcher=launcher, gpu="NVIDIA H100 80GB HBM3")
    assert on_h100.choose(3499, 340, 18).origin == "covering" and on_h200.choose(3499, 340, 18).library
    assert {on_h100.choose(118, 705, 101).origin, on_h200.choose(118, 705, 101).origin} == {"covering"}
    assert autotune.load(launcher=launcher).choose(8192, 8192, 64).library  # the fake GPU: nothing measured
    mine = tmp_path / "db" / "autotune.sqlite"
    mine.parent.mkdir()
    db = store.open_db(mine)
    own = timed(db, (8192, 8192, 64), "blocked", 0.1, 0.5, **SMALL)  # the user's own row, faster: it wins
    db.close()
    assert autotune.load(launcher=launcher, gpu=GPU).choose(8192, 8192, 64).kernel == own
    assert not autotune.load(launcher=launcher, defaults_only=True).choose(64, 64, 64).library


def test_the_library_test_of_a_call_is_per_transposes_and_reads_only_rows_that_name_a_kernel(recorded):
    """A repeated torch call of these shapes and transposes goes straight to torch where the dispatcher says
    cuBLAS computes it (api.matmul's short way): a row of another layout at the shape says nothing of it, and
    a row whose family parameters are missing (a database merged without their columns) names no kernel, as
    choose reads it too."""
    from autotune.api.dispatch import Dispatcher

    path, _ = recorded
    dispatcher = Dispatcher(path)
    assert not dispatcher.runs_library(GPU, (512, 512, 512))  # its NN row beat cuBLAS
    assert not dispatcher.runs_library(GPU, (512, 512, 512), trans_b=True)  # and its NT row
    assert dispatcher.runs_library(GPU, (2048, 512, 512), trans_a=True, trans_b=True)  # nothing TT there
    assert not dispatcher.runs_library(GPU, (60, 32, 16)) and dispatcher.runs_library(GPU, (60, 32, 16), trans_b=True)
    db = store.open_db(path)
    db.execute("UPDATE results SET BM = NULL WHERE M = 512 AND N = 512 AND K = 512 AND COALESCE(TB, 0) = 0")
    db.conn.commit()
    db.close()
    dispatcher = Dispatcher(path)
    assert dispatcher.choose(GPU, (512, 512, 512), Layout(False, False, False, 1)).library
    assert dispatcher.runs_library(GPU, (512, 512, 512))


@pytest.fixture
def swappable(tmp_path):
    """Host-bound rows that cover products of one column (N of 15: its rows unaligned, as one column's are) and
    of one row, a row measured at a swapped product that lost to cuBLAS there, and one that won on the GPU."""
    path = tmp_path / "s.sqlite"
    db = store.open_db(path)
    names = {"one_col": timed(db, (256, 15, 64), "blocked", 0.006, 0.008, **SMALL),
             "one_row": timed(db, (16, 256, 64), "blocked", 0.006, 0.008, **SMALL),
             "lost": timed(db, (100, 1, 60), "blocked", 0.0065 + HOST_SAVING_MS, 0.0060, **SMALL),
             # faster than cuBLAS at its own shape, on the GPU: cuBLAS's time of the call's own product may differ
             "gpu_bound": timed(db, (4000, 1, 4000), "blocked", 0.050, 0.080, **SMALL)}
    db.close()
    return str(path), names


def test_one_row_of_x_wt_runs_as_w_times_x_where_a_row_covers_that_product(swappable, launcher):
    path, k = swappable
    mm = autotune.load(db=path, launcher=launcher)
    choice = mm.choose(1, 200, 60, trans_b=True)  # x (1 x 60) times W (200 x 60) transposed: W·x, 200x1x60
    assert (choice.kernel, choice.origin, choice.swapped) == (k["one_col"], "covering", (200, 1, 60))
    assert choice.describe().endswith("measured at 256x15x64; as 200x1x60, A and B swapped)")
    assert not mm.runs_library(1, 200, 60, trans_b=True)
    one_col = mm.choose(200, 1, 60, trans_a=True)  # Aᵀ·b of one column: b·A, 1x200x60
    assert (one_col.kernel, one_col.swapped) == (k["one_row"], (1, 200, 60))
    assert mm.choose(1, 200, 60).swapped is None  # a plain call of one row: covered as it is
    # two rows are not one product of the operands swapped; past the covering row; a lost row at the product;
    # the cuBLAS-style signature; two columns; a row that won at the product itself, but not host-bound
    assert mm.choose(4000, 1, 4000).origin == "exact"
    for shape, flags in [((2, 200, 60), {"trans_b": True}), ((1, 300, 60), {"trans_b": True}),
                         ((1, 100, 60), {"trans_b": True}), ((1, 200, 60), {"trans_b": True, "blas": True}),
                         ((200, 2, 60), {"trans_a": True}), ((1, 4000, 4000), {"trans_b": True})]:
        assert mm.choose(*shape, **flags).library, (shape, flags)


def test_a_swapped_call_launches_the_kernel_on_b_then_a_at_the_swapped_shape(swappable, launcher):
    path, k = swappable
    mm = autotune.load(db=path, launcher=launcher)
    x, w, y = DeviceArray((1, 60), 0x100000), DeviceArray((200, 60), 0x200000), DeviceArray((1, 200), 0x300000)
    assert mm(x, w, out=y, trans_b=True, stream=5) is y
    call = launcher.launches[-1]
    assert (call["kernel"], call["ptrs"], call["shape"], call["ops"]) == (
        f"loaded {k['one_col']}", (0x200000, 0x100000, 0x300000), (200, 1, 60), None)
    a, b, c = DeviceArray((60, 200), 0x400000), DeviceArray((60, 1), 0x500000), DeviceArray((200, 1), 0x600000)
    mm(a, b, out=c, trans_a=True, stream=5)
    call = launcher.launches[-1]
    assert (call["ptrs"], call["shape"]) == ((0x500000, 0x400000, 0x600000), (1, 200, 60))
    mm(DeviceArray((2, 60), 0x100000), w, out=DeviceArray((2, 200), 0x300000), trans_b=True, stream=5)
    assert launcher.launches[-1]["kernel"] == "cublas"  # two rows: cuBLAS, the operands as they lie


def test_a_linear_layer_with_a_bias_leaves_host_bound_products_to_f_linear(swappable, launcher, monkeypatch):
    pytest.importorskip("torch", reason="torch is not installed (pip install torch; CI installs a CPU build)")
    from autotune.torch import nn

    path, _ = swappable
    mm = autotune.load(db=path, launcher=launcher)
    monkeypatch.setattr(nn, "current", lambda: mm)
    assert mm.choose(1, 200, 60, trans_b=True).origin == "covering"
    # one token through a layer of 60 -> 200: our kernel without a bias, F.linear (the bias fused) with one
    assert not nn._library_at(1, 200, 60, 0, False) and nn._library_at(1, 200, 60, 0, True)
    assert nn._library_at(2, 200, 60, 0, False)  # cuBLAS computes it: F.linear either way
