"""The shape's roofline: the FMA and DRAM floors from the shape and the device spec alone, and the
columns every verified row gets from them, whatever the backend."""
from pathlib import Path

import pytest

from autotune.explain.model import PRESETS
from autotune.explain.roofline import dram_bytes, pct_of_roofline, roofline, roofline_columns, roofline_ms
from autotune.families import NAIVE, TILED
from autotune.search.loop import run_search
from autotune.space import Limits
from tests.fakes import FakeBackend

H200 = PRESETS["h200"]  # 132 SMs x 128 lanes x 2 FLOP x 1980 MHz = 66.9 TFLOP/s; 4800 GB/s


def test_a_large_square_is_compute_bound():
    r = roofline(4096, 4096, 4096, H200)
    assert r.fma_ms == pytest.approx(2 * 4096**3 / 66.90816e12 * 1e3)  # 2.054 ms
    assert r.dram_ms == pytest.approx(3 * 4 * 4096**2 / 4800e9 * 1e3)  # 0.042 ms: three matrices once
    assert not r.memory_bound and r.ms == r.fma_ms == roofline_ms(4096, 4096, 4096, H200)


def test_one_row_against_a_large_matrix_is_memory_bound():
    r = roofline(1, 8192, 8192, H200)
    assert dram_bytes(1, 8192, 8192) == 4 * (8192 + 8192 * 8192 + 8192)  # A, B read once; C written once
    assert r.memory_bound and r.ms == r.dram_ms == pytest.approx(0.05594, rel=1e-3)
    assert r.fma_ms == pytest.approx(0.002006, rel=1e-3)


def test_shallow_k_is_compute_bound_and_deep_k_too():
    # intensity of 8192x8192x64 is K/2 = 32 FLOP per byte, above the H200's ridge of ~14
    assert not roofline(8192, 8192, 64, H200).memory_bound
    assert not roofline(256, 256, 262144, H200).memory_bound
    assert roofline(16, 4096, 14336, H200).memory_bound


def test_pct_of_roofline_is_roofline_time_over_measured_time():
    ms = roofline_ms(2048, 2048, 2048, H200)
    assert pct_of_roofline(2048, 2048, 2048, 2 * ms, H200) == pytest.approx(50.0)


def test_only_verified_timed_rows_get_columns():
    row = {"status": "ok", "M": 1, "N": 8192, "K": 8192, "time_ms": 0.1}
    cols = roofline_columns(row, H200)
    r = roofline(1, 8192, 8192, H200)
    assert cols == {"ceil_dram": pytest.approx(2 * 8192 * 8192 / r.dram_ms / 1e9), "roofline_ms": r.ms,
                    "pct_roofline": pytest.approx(100 * r.ms / 0.1), "memory_bound": 1}
    assert roofline_columns({**row, "status": "wrong"}, H200) == {}
    assert roofline_columns({**row, "time_ms": None}, H200) == {}


def test_every_ok_row_of_a_search_carries_the_roofline(db):
    """Recorded when the row is written, for a backend with no SASS model (here a fake GPU)."""
    run_search(db, FakeBackend(8, 48, 4096), [NAIVE, TILED], Limits(), sampler="random", trials=8, seed=1)
    rows = list(db.query("select * from results"))
    ok = [r for r in rows if r["status"] == "ok"]
    assert ok and len(ok) < len(rows)  # some configs are refused: those get no roofline
    expected = roofline(8, 48, 4096, H200)
    for r in ok:
        assert r["roofline_ms"] == pytest.approx(expected.ms)
        assert r["pct_roofline"] == pytest.approx(100 * expected.ms / r["time_ms"])
        assert r["memory_bound"] == int(expected.memory_bound) == 1
        assert r["ceil_dram"] > 0
    assert all(r["roofline_ms"] is None for r in rows if r["status"] != "ok")


def test_an_h100s_rows_carry_the_h100s_roofline(db, monkeypatch):
    """The row's GPU names the preset: an H100 SXM's DRAM floor (3350 GB/s), not the H200's."""
    monkeypatch.setattr(FakeBackend, "provenance", property(lambda self: {"gpu_name": "NVIDIA H100 80GB HBM3",
                                                                           "arch": "sm_90"}))
    run_search(db, FakeBackend(8, 48, 4096), [NAIVE], Limits(), sampler="random", trials=3, seed=1)
    ok = [r for r in db.query("select * from results") if r["status"] == "ok"]
    expected = roofline(8, 48, 4096, PRESETS["h100-sxm"])
    assert ok and expected.dram_ms > roofline(8, 48, 4096, H200).dram_ms
    assert all(r["roofline_ms"] == pytest.approx(expected.ms) for r in ok)


@pytest.mark.parametrize("gpu, model", [("NVIDIA H200", "NVIDIA H200"), ("NVIDIA H100 80GB HBM3", "NVIDIA H100 SXM")])
def test_a_rows_ceilings_are_those_of_its_gpus_preset(tmp_path, gpu, model):
    """The SASS model's columns of a row (explain.counts.for_result) name the preset of the GPU that measured it;
    the same counts give an H100 SXM a lower DRAM ceiling."""
    import sqlite3

    import sqlite_utils

    from autotune.codegen.render import render
    from autotune.explain import counts as ex
    from autotune.families import config_of_row

    with sqlite3.connect(Path(__file__).parent / "data" / "h200-4096-naive-tiled-counted.sqlite") as conn:
        conn.row_factory = sqlite3.Row
        counts = dict(conn.execute("SELECT * FROM kernels WHERE kernel = 'sgemm_tiled_T64_bx16_by8_xcols_pad0'").fetchone())
        row = dict(conn.execute("SELECT * FROM results WHERE kernel = ?", [counts["kernel"]]).fetchone())
    conn.close()
    config = config_of_row(row)
    measured = {k: counts[k] for k in counts if k not in ("source_hash", "arch", "kernel", "family", "created_at")}
    backend = type("Backend", (), {"explain": True, "provenance": {"gpu_name": gpu, "arch": "sm_90"}})()
    cols = ex.for_result(sqlite_utils.Database(tmp_path / "k.sqlite"), backend, config, render(config), "ok", measured)
    spec = PRESETS["h100-sxm" if "H100" in gpu else "h200"]
    assert cols["model_device"] == model and cols["ceil_global"] == pytest.approx(
        ex.model_columns(config, measured, spec)["ceil_global"])
    if "H100" in gpu:
        assert cols["ceil_global"] < ex.model_columns(config, measured, H200)["ceil_global"]
