"""The nearest-shape rule and what uses it: a search at a new shape measures the nearest recorded
shapes' winners first (refused ones skipped), and `best` / `export` at a shape never tuned answer
with the nearest recorded shape's best and say so. Databases are built through store functions."""
import json

import pytest
from click.testing import CliRunner

from autotune import store
from autotune.cli import cli
from autotune.codegen.render import render, sha256
from autotune.families import FAMILIES, NAIVE, TILED
from autotune.search.loop import run_search
from autotune.space import Limits, make_config, rank_shapes, shape_distance
from tests.fakes import FakeBackend
from tests.names import tags

CUBE = (256, 256, 256)


def record(db, shape, family, ms, backend="fake", gpu="Fake GPU", status="ok", **params) -> str:
    """A result row as a search would write it (its source stored); returns the kernel name."""
    config = make_config(FAMILIES[family], params)
    source = render(config)
    store.insert_source(db, sha256(source), config.name, family, source)
    M, N, K = shape
    store.insert_result(db, {"backend": backend, "gpu_name": gpu, "gpu_uuid": f"{gpu}-0", "M": M, "N": N, "K": K,
                             "kernel": config.name, "family": family, **config.values, "source_hash": sha256(source),
                             "status": status, "reason": "", "time_ms": ms, "time_ms_min": ms, "time_ms_max": ms,
                             "tflops": 2 * M * N * K / ms / 1e9, "pct_cublas": None, "pct_peak": None})
    return config.name


def trial_kernels(db, shape) -> list[str]:
    return [r["kernel"] for r in db.query("SELECT r.kernel FROM trials t JOIN results r ON r.id = t.result_id "
                                          "WHERE r.M = ? AND r.N = ? AND r.K = ? ORDER BY t.id", list(shape))]


def test_distance_is_on_a_log_scale_and_ties_go_to_the_smaller_shape():
    assert shape_distance((4096, 4096, 4096), (4097, 4096, 4096)) < 0.001
    assert shape_distance((16, 4096, 4096), (64, 4096, 4096)) == 2
    assert shape_distance((64, 8, 8), (16, 8, 8)) == shape_distance((16, 8, 8), (64, 8, 8))
    recorded = [(4096,) * 3, (1024,) * 3, (2048,) * 3, (2048, 1024, 2048), (1024, 2048, 2048), (2048, 2048, 4096)]
    assert rank_shapes((2048,) * 3, recorded) == [
        (1024, 2048, 2048), (2048, 1024, 2048),  # distance 1, equal work: M decides
        (2048, 2048, 4096),  # distance 1, more work
        (1024,) * 3, (4096,) * 3,  # distance 3 each: the smaller first
    ]  # the shape itself is not "near"


def test_only_verified_rows_of_the_same_backend_and_gpu_make_a_shape_recorded(db):
    record(db, CUBE, "tiled", 1.0)
    record(db, (512, 512, 512), "tiled", 1.0, status="wrong")  # closer, but no verified kernel
    record(db, (600, 600, 601), "tiled", 1.0, gpu="Other GPU")
    record(db, (600, 601, 600), "tiled", 1.0, backend="sim")
    assert store.nearest_shapes(db, (600, 600, 600), "fake", "Fake GPU") == [CUBE]
    assert store.nearest_shapes(db, (600, 600, 600), "fake") == [(600, 600, 601), CUBE]  # any GPU


def test_a_search_at_a_new_shape_measures_the_nearest_shapes_winners_first(db):
    near = [record(db, CUBE, "tiled", 1.0, T=16), record(db, CUBE, "naive", 3.0, by=4)]
    record(db, CUBE, "tiled", 2.0, T=64, bx=16, by=16)  # not its family's best there
    farther = record(db, (128, 128, 128), "tiled", 0.5, T=8, pad=1)  # faster, but a shape farther away
    record(db, (128, 128, 128), "naive", 3.0, by=4)  # the same config as at CUBE: measured once
    notes: list[str] = []
    run_search(db, FakeBackend(512, 256, 256), [NAIVE, TILED], Limits(), sampler="random", trials=6, seed=5,
               note=notes.append)
    defaults = [make_config(NAIVE, {}).name, make_config(TILED, {}).name]
    assert trial_kernels(db, (512, 256, 256))[:5] == [*near, farther, *defaults]
    assert notes == ["autotune: starting from 3 configs recorded at 256x256x256, 128x128x128, then the family defaults"]


def test_a_small_budget_measures_a_fit_that_moved_before_the_second_neighbour(db):
    """Two trials at a deep K: the nearest shape's winner, then split-K's default fitted to the shape (its
    splits), not the next neighbour's winner (search.ranking says why)."""
    from autotune.families import SPLITK
    from autotune.space import fitted

    deep = (256, 256, 65536)
    near = [record(db, (256, 256, 32768), "tiled", 1.0, T=16), record(db, (256, 256, 32768), "naive", 3.0, by=4)]
    backend = FakeBackend(*deep)
    run_search(db, backend, [NAIVE, TILED, SPLITK], Limits(), sampler="random", trials=3, seed=5)
    fit = fitted(make_config(SPLITK, {}), deep, Limits())
    assert fit.name != make_config(SPLITK, {}).name  # the fit moved: K is deep for 4 tiles
    assert backend.measured[:3] == [near[0], fit.name, near[1]]


def test_neighbours_refused_at_the_new_shape_are_skipped(db):
    record(db, CUBE, "tiled", 1.0, T=8)  # at 4096 rows: grid.y = 512, over the limit below
    kept = record(db, CUBE, "tiled", 2.0, T=64, bx=16, by=16)  # grid.y = 64
    record(db, CUBE, "naive", 1.0, x_over="rows", bx=1, by=1)  # grid.y = 256 (over N)
    backend, notes = FakeBackend(4096, 256, 256), []
    run_search(db, backend, [TILED], Limits(max_grid_y=100), sampler="random", trials=1, note=notes.append)
    assert backend.measured == [kept]
    assert notes == ["autotune: starting from 1 config recorded at 256x256x256 (1 refused at this shape), "
                     "then the family defaults"]


def test_a_search_with_nothing_recorded_elsewhere_starts_from_the_defaults(db):
    notes: list[str] = []
    run_search(db, FakeBackend(), [TILED], Limits(), sampler="random", trials=1, note=notes.append)
    assert trial_kernels(db, CUBE) == [make_config(TILED, {}).name]
    assert "starting from the family defaults" in notes[0]


def test_a_replayed_search_starts_from_what_replays_recorded_at_other_shapes(tmp_path):
    dataset, db = tmp_path / "dataset.sqlite", tmp_path / "r.sqlite"
    data = store.open_db(dataset)
    for shape in (CUBE, (128, 256, 256)):
        run_search(data, FakeBackend(*shape), [TILED], Limits(), sampler="grid", trials=12)
    data.close()
    replay = ["search", "--backend", "replay", "--replay-db", str(dataset), "--family", "tiled", "--db", str(db)]
    assert invoke(*replay, "--M", "256", "--sampler", "grid", "--trials", "12").exit_code == 0
    result = invoke(*replay, "--M", "128", "--N", "256", "--K", "256", "--trials", "1")
    assert result.exit_code == 0, result.output
    assert "autotune: starting from 1 config recorded at 256x256x256, then the family defaults" in result.stderr
    winner = store.best(store.open_db(db), CUBE, backend="replay")["kernel"]
    assert trial_kernels(store.open_db(db), (128, 256, 256)) == [winner]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """GPU rows at 1024^3 and 32768x8x8, and a faster emulator row at 1000x999x1000."""
    path = tmp_path_factory.mktemp("nearest") / "r.sqlite"
    db = store.open_db(path)
    kw = {"backend": "cuda", "gpu": "NVIDIA H200"}
    cube = record(db, (1024,) * 3, "tiled", 2.0, T=32, **kw)
    record(db, (1024,) * 3, "tiled", 3.0, T=16, **kw)
    record(db, (1000, 999, 1000), "tiled", 0.1, T=8, backend="sim", gpu="CPU emulator")
    refused = record(db, (32768, 8, 8), "naive", 1.0, by=1, **kw)  # grid.y = 100000 at 100000 rows: refused there
    tall = record(db, (32768, 8, 8), "naive", 2.0, by=8, **kw)
    db.close()
    return path, {"cube": cube, "refused": refused, "tall": tall}


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args))


def test_best_at_a_shape_never_tuned_answers_with_the_nearest_and_says_so(recorded):
    path, k = recorded
    result = invoke("best", "--M", "1000", "--N", "999", "--K", "1001", "--db", str(path))
    assert result.exit_code == 0, result.output
    assert k["cube"] in result.stdout and "1024x1024x1024" in result.stdout
    assert result.stderr == (f"autotune: no verified result at 1000x999x1001 from backend cuda; nearest recorded "
                             f"shape 1024x1024x1024: {k['cube']}\n")
    # the fastest there a constraint refuses at the shape asked gives way to the next fastest
    result = invoke("best", "--M", "100000", "--N", "8", "--K", "8", "--db", str(path))
    assert result.exit_code == 0, result.output
    assert k["tall"] in result.stdout and k["refused"] not in result.output


def test_best_at_a_recorded_shape_and_with_nothing_recorded_is_unchanged(recorded):
    path, k = recorded
    result = invoke("best", "--M", "1024", "--db", str(path))
    assert result.exit_code == 0 and result.stderr == "" and k["cube"] in result.stdout
    result = invoke("best", "--M", "64", "--backend", "replay", "--db", str(path))
    assert result.exit_code == 2
    assert result.stderr.startswith("error: no verified result for 64x64x64 from backend replay"), result.stderr


def test_export_at_a_shape_never_tuned_writes_the_nearest_best_for_the_shape_asked(recorded, tmp_path):
    path, k = recorded
    out = tmp_path / "near.cu"
    result = invoke("export", "--M", "1000", "--N", "999", "--K", "1001", "-o", str(out), "--db", str(path))
    assert result.exit_code == 0, result.output
    assert "nearest recorded shape 1024x1024x1024" in result.stderr
    manifest = json.loads(out.with_suffix(".json").read_text())
    assert manifest["kernel"] == k["cube"]
    assert manifest["shape"] == {"M": 1000, "N": 999, "K": 1001}
    assert manifest["grid"] == [32, 32, 1]  # launched for the shape asked: ceil(999/32), ceil(1000/32)
    assert {key: manifest["measured"][key] for key in "MNK"} == {"M": 1024, "N": 1024, "K": 1024}


def test_a_search_of_another_layout_starts_from_this_shapes_winner_read_in_that_layout(db):
    from autotune.families.layouts import layout_choices, narrow_to

    nn = make_config(FAMILIES["blocked"], {"BM": 64, "BN": 64})
    record(db, CUBE, "blocked", 1.0, BM=64, BN=64)
    record(db, CUBE, "blocked", 2.0)  # slower: not the start
    [nt] = narrow_to([FAMILIES["blocked"]], layout_choices("NT"))
    backend, notes = FakeBackend(*CUBE), []
    run_search(db, backend, [nt], Limits(), sampler="random", trials=1, note=notes.append)
    tiling = {k: v for k, v in nn.values.items() if k not in ("PB", "RT")}  # those two follow the layout
    assert backend.measured[0] == make_config(FAMILIES["blocked"], {**tiling, "TB": 1, "PB": 0}).name
    assert {"TB1", "RT1"} <= tags(backend.measured[0])  # NT's own default at 256 rows: no transpose first (the fit)
    assert notes[0].startswith("autotune: starting from 1 config recorded at 256x256x256")


def test_at_enough_rows_another_layouts_winner_starts_an_nt_search_with_b_transposed_first(db):
    from autotune.families.blocked import PB_MIN_ROWS
    from autotune.families.layouts import layout_choices, narrow_to

    shape = (PB_MIN_ROWS, 256, 256)
    record(db, shape, "blocked", 1.0, BM=64, BN=64)
    [nt] = narrow_to([FAMILIES["blocked"]], layout_choices("NT"))
    backend = FakeBackend(*shape)
    run_search(db, backend, [nt], Limits(), sampler="random", trials=1)
    assert backend.measured[0] == make_config(FAMILIES["blocked"], {"BM": 64, "BN": 64, "TB": 1}).name
    assert {"TB1", "PB1"} <= tags(backend.measured[0])


def test_another_layouts_winner_with_a_prologue_starts_a_search_of_nn(db):
    from autotune.families.layouts import layout_choices, narrow_to

    record(db, CUBE, "blocked", 1.0, BM=64, BN=64, TB=1)  # NT's default there: PB=1, which NN refuses
    [nn] = narrow_to([FAMILIES["blocked"]], layout_choices("NN"))
    backend, notes = FakeBackend(*CUBE), []
    run_search(db, backend, [nn], Limits(), sampler="random", trials=1, note=notes.append)
    assert backend.measured[0] == make_config(FAMILIES["blocked"], {"BM": 64, "BN": 64}).name
    assert notes[0].startswith("autotune: starting from 1 config recorded at 256x256x256")


def test_a_row_is_stale_only_when_its_config_renders_another_source_today():
    from autotune.search.plan import stale_source

    config, limits = make_config(TILED, {}), Limits()
    row = {"kernel": config.name, "family": "tiled", **dict(config.values)}
    stale = stale_source([TILED], limits)
    assert not stale({**row, "source_hash": sha256(render(config, limits))})  # today's source
    assert stale({**row, "source_hash": "0" * 64})  # an older template's
    assert not stale({**row, "source_hash": ""})  # refused: no source, nothing to measure in its place
    assert not stale_source([NAIVE], limits)({**row, "source_hash": "0" * 64})  # a family not searched
