"""explain(): SASS counts in the kernels table and in results rows, once per kernel, and
never a failed search because of the model."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from autotune import store
from autotune.codegen.render import render
from autotune.explain import counts as ex
from autotune.explain.model import PRESETS
from autotune.explain.sass import find_nvdisasm
from autotune.families import FAMILIES, NAIVE, OZAKI, TILED, config_of_row
from autotune.search.loop import run_search
from autotune.space import Limits, make_config
from tests.fakes import FakeBackend

try:
    find_nvdisasm()
    HAVE_NVDISASM = True
except Exception:
    HAVE_NVDISASM = False
needs_nvdisasm = pytest.mark.skipif(not HAVE_NVDISASM, reason="nvdisasm not installed (the sass extra)")


def tiled(T: int, pad: int = 0):
    return make_config(FAMILIES["tiled"], {"T": T, "pad": pad})


@needs_nvdisasm
def test_explain_gives_counts_and_model_and_caches_by_source(db, monkeypatch):
    cols = ex.explain(tiled(32), db=db)
    assert cols["ffma"] == 32 and cols["lds128"] == 8 and cols["lds32"] == 32  # merged As reads
    assert cols["lds_per_ffma"] == pytest.approx(1.25) and cols["bar"] == 2 and cols["spills"] == 0
    assert cols["ceil_shared"] == pytest.approx(PRESETS["h200"].fma_tflops / 5)
    assert cols["binding"] == "shared" and cols["predicted_tflops"] == cols["ceil_shared"]
    assert cols["occupancy"] == 64 and cols["model_device"] == "NVIDIA H200"
    assert db["kernels"].count == 1
    monkeypatch.setattr(ex, "analyze_source", lambda *a: pytest.fail("analysed twice"))
    assert ex.explain(tiled(32), db=db) == cols  # the second call reads the kernels table


@needs_nvdisasm
def test_shared_ceiling_is_flat_in_T() -> None:
    ceilings = {T: ex.explain(tiled(T))["ceil_shared"] for T in (8, 16, 32)}
    assert len({round(c, 9) for c in ceilings.values()}) == 1, ceilings


@needs_nvdisasm
def test_naive_has_no_shared_ceiling_and_is_global_bound() -> None:
    cols = ex.explain(make_config(NAIVE, {}))
    assert cols["ceil_shared"] is None and cols["binding"] == "global" and cols["lds_per_ffma"] == 0


@needs_nvdisasm
def test_search_rows_carry_counts_and_measured_over_ceiling(db):
    backend = FakeBackend(64, 64, 64)
    backend.explain = True
    run_search(db, backend, [NAIVE, TILED], Limits(), sampler="random", trials=6, seed=5)
    ok = list(db.query("select * from results where status = 'ok'"))
    assert ok and all(r["ffma"] and r["predicted_tflops"] for r in ok)
    for r in ok:
        assert r["measured_over_ceiling"] == pytest.approx(r["tflops"] / r["predicted_tflops"])
    kernels = {k["source_hash"] for k in db["kernels"].rows}
    assert {r["source_hash"] for r in ok} <= kernels
    invalid = list(db.query("select * from results where status = 'invalid'"))
    assert all(r.get("ffma") is None for r in invalid)


def test_no_nvdisasm_means_no_columns_and_the_search_goes_on(db, monkeypatch):
    monkeypatch.setattr(ex, "have_nvdisasm", lambda: False)
    assert ex.explain(tiled(16)) == {}
    backend = FakeBackend(64, 64, 64)
    backend.explain = True
    run_search(db, backend, [TILED], Limits(), sampler="random", trials=3, seed=1)
    assert db["results"].count_where("status != 'invalid'") == 3
    assert "kernels" not in db.table_names()


def test_a_failing_model_never_stops_the_search(db, monkeypatch, capsys):
    def boom(*a, **k):
        raise RuntimeError("model exploded")

    monkeypatch.setattr(ex, "explain", boom)
    backend = FakeBackend(64, 64, 64)
    backend.explain = True
    run_search(db, backend, [TILED], Limits(), sampler="random", trials=2, seed=2)
    assert db["results"].count_where("status != 'invalid'") == 2
    assert "model exploded" in capsys.readouterr().err


@needs_nvdisasm
def test_sass_command_prints_counts_and_writes_no_database(tmp_path):
    # `sass` only reads the database (for --id): it neither creates one nor stores its counts.
    from click.testing import CliRunner

    from autotune.cli import cli

    db_path = tmp_path / "k.sqlite"
    result = CliRunner().invoke(cli, ["sass", "--family", "tiled", "-p", "T=32", "-p", "pad=0", "--db", str(db_path)])
    assert result.exit_code == 0, result.output
    out = result.output
    assert "sgemm_tiled_T32_bx32_by32_xcols_pad0" in out and "FFMA 32" in out and "LDS.128 8" in out
    assert "shared loads per FFMA 1.25" in out and "registers" in out and "predicted 13.38" in out
    assert not db_path.exists()


def test_sass_without_nvdisasm_is_one_line(monkeypatch, tmp_path):
    from click.testing import CliRunner

    from autotune.cli import cli
    from autotune.explain import sass

    def missing() -> str:
        raise sass.AutotuneError(sass.INSTALL_HINT)

    monkeypatch.setattr(ex, "find_nvdisasm", missing)
    result = CliRunner().invoke(cli, ["sass", "--family", "naive", "--db", str(tmp_path / "k.sqlite")])
    assert result.exit_code == 2 and result.output.strip() == f"error: {sass.INSTALL_HINT}"


# A database of ten tiled kernels' counts written before hgmma, imma and igmma were columns of the kernels table
OLD_DB = Path(__file__).resolve().parent / "data" / "h200-4096-naive-tiled-counted.sqlite"


def test_a_kernels_table_from_before_the_integer_mma_columns_still_reads(tmp_path, monkeypatch):
    shutil.copyfile(OLD_DB, tmp_path / "old.sqlite")
    db = store.open_db(tmp_path / "old.sqlite")
    assert not {"imma", "igmma", "igmma_n"} & set(db["kernels"].columns_dict)
    monkeypatch.setattr(ex, "analyze_source", lambda *a: pytest.fail("analysed: the table was not read"))
    row = next(db.query("SELECT r.*, s.source FROM results r JOIN kernels k ON k.source_hash = r.source_hash "
                        "JOIN sources s ON s.source_hash = r.source_hash LIMIT 1"))
    config = config_of_row(row)
    old = ex.kernel_counts(config, row["source"], "sm_90", db)
    assert old["ffma"] > 0 and old["imma"] is None and old["igmma_n"] is None
    model = ex.model_columns(config, old, PRESETS["h200"])
    assert model == ex.model_columns(config, {**old, "imma": 0, "igmma": 0, "igmma_n": 0}, PRESETS["h200"])
    # an ozaki kernel's counts (its SASS: tests/test_ozaki.py) saved there add the columns; the old rows still read
    ozaki = make_config(OZAKI, {})
    counts = {**dict.fromkeys(ex.COUNT_COLUMNS, 0), "lds32": 32, "bar": 1, "sass_regs": 198, "sass_scope": "loop",
              "imma": 16, "lds_per_ffma": None}
    ex.save_counts(db, ozaki, render(ozaki), "sm_90", counts)
    assert ex.kernel_counts(ozaki, render(ozaki), "sm_90", db) == counts
    assert ex.kernel_counts(config, row["source"], "sm_90", db) == old
    assert ex.model_columns(config, old, PRESETS["h200"]) == model


def test_a_device_preset_has_one_name_for_the_space_and_the_ceiling_model(monkeypatch, tmp_path):
    # `space --device-preset`, `sass --device-preset` and `report --device-preset` name a device the same way
    from click.testing import CliRunner

    from autotune.cli import cli
    from autotune.explain import counts
    from autotune.explain.model import PRESETS as SPECS
    from autotune.space.devices import PRESETS as LIMITS

    assert set(SPECS) <= set(LIMITS)
    seen = []
    monkeypatch.setattr(counts, "sass_command", lambda config, arch, preset, full: seen.append(preset) or "counted")
    for flag in ("--device-preset", "--preset"):  # the former name still works
        result = CliRunner().invoke(cli, ["sass", "--family", "naive", flag, "h100-sxm", "--db", str(tmp_path / "k.db")])
        assert result.exit_code == 0 and result.output.strip() == "counted", result.output
    assert seen == ["h100-sxm", "h100-sxm"]
