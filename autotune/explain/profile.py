"""The profiler's numbers beside the model's: what the model says a kernel should do at a shape
(FFMA, shared wavefronts, sectors per request, DRAM bytes, time), and a measured-against-modelled
table of a profiles row, for `autotune profile` and the report alike.

Modelled values, per launch at M x N x K:
  FFMA               M*N*K thread instructions: every kernel does one FFMA per multiply-add.
  shared wavefronts  the model's wavefronts per warp FFMA times the M*N*K/32 warp FFMA (tiled:
                     loads only, so the measured count, which has the stores too, is higher).
  sectors/request    a perfectly coalesced warp load of the hot loop's widths: 4 sectors (128 B)
                     for 32-bit loads, 8 for 64-bit, 16 for 128-bit.
  DRAM bytes         floor: A and B read once, C written once (explain.roofline); tiles: every
                     operand read once per tile (the global ceiling's assumption; L2 serves less).
  time               2*M*N*K at the model's predicted (lowest) ceiling.
"""
from __future__ import annotations

from typing import Any

from autotune.errors import AutotuneError
from autotune.explain.model import WARP, intensity
from autotune.explain.roofline import dram_bytes
from autotune.space import Config

_SECTORS_PER_REQUEST = {"ldg32": 4, "ldg64": 8, "ldg128": 16}


def ideal_sectors_per_request(counts: dict[str, Any]) -> float | None:
    loads = {k: counts.get(k) or 0 for k in _SECTORS_PER_REQUEST}
    total = sum(loads.values())
    return sum(n * _SECTORS_PER_REQUEST[k] for k, n in loads.items()) / total if total else None


def modelled(config: Config, shape: tuple[int, int, int], model: dict[str, Any]) -> dict[str, Any]:
    """The model's columns of a profiles row; `model`: explain()'s counts and model columns ({} without nvdisasm)."""
    M, N, K = shape
    mnk = M * N * K
    try:
        tiles = 2.0 * mnk / intensity(config)
    except AutotuneError:  # a family the traffic model does not know yet
        tiles = None
    per_ffma, tflops = model.get("wavefronts_per_ffma"), model.get("predicted_tflops")
    return {
        "model_ffma": mnk,
        "model_shared_wavefronts": per_ffma * mnk / WARP if per_ffma is not None else None,
        "model_sectors_per_request": ideal_sectors_per_request(model),
        "model_dram_floor": dram_bytes(M, N, K),
        "model_dram_tiles": tiles,
        "model_time_ms": 2.0 * mnk / (tflops * 1e12) * 1e3 if tflops else None,
        "model_binding": model.get("binding"),
        "model_device": model.get("model_device"),
    }


def stall_columns(row: dict[str, Any], n: int = 3) -> list[tuple[str, float]]:
    """The n largest stall reasons of a profiles row."""
    stalls = [(k.removeprefix("stall_"), v) for k, v in row.items() if k.startswith("stall_") and v is not None]
    return sorted(stalls, key=lambda kv: -kv[1])[:n]


def _g(value: Any, spec: str = ".4g") -> str:
    return "—" if value is None else f"{value:{spec}}"


def _ratio(measured: Any, model: Any) -> str:
    return f"{measured / model:.2f}x" if measured is not None and model else "—"


def comparison(row: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """(quantity, measured, modelled, measured / modelled) for one profiles row."""
    return [
        ("time (ms)", _g(row.get("time_ms")), _g(row.get("model_time_ms")),
         _ratio(row.get("time_ms"), row.get("model_time_ms"))),
        ("FFMA (thread instructions)", _g(row.get("ffma"), ".6g"), _g(row.get("model_ffma"), ".6g"),
         _ratio(row.get("ffma"), row.get("model_ffma"))),
        ("shared wavefronts", _g(row.get("shared_wavefronts")), _g(row.get("model_shared_wavefronts")),
         _ratio(row.get("shared_wavefronts"), row.get("model_shared_wavefronts"))),
        ("global-load sectors / request", _g(row.get("sectors_per_request"), ".3g"),
         _g(row.get("model_sectors_per_request"), ".3g"),
         _ratio(row.get("sectors_per_request"), row.get("model_sectors_per_request"))),
        ("DRAM bytes (floor)", _g(row.get("dram_bytes")), _g(row.get("model_dram_floor")),
         _ratio(row.get("dram_bytes"), row.get("model_dram_floor"))),
        ("DRAM bytes (once per tile)", _g(row.get("dram_bytes")), _g(row.get("model_dram_tiles")),
         _ratio(row.get("dram_bytes"), row.get("model_dram_tiles"))),
        ("DRAM throughput (% of peak)", _g(row.get("dram_pct"), ".1f"), "—", "—"),
    ]


def stalls_text(row: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v:.3g}" for k, v in stall_columns(row)) or "none recorded"


def format_profile(row: dict[str, Any]) -> str:
    """The table `autotune profile` prints."""
    shape = f"{row['M']}x{row['N']}x{row['K']}"
    where = f"result {row['result_id']}, " if row.get("result_id") is not None else ""
    lines = [f"{row['kernel']}  ({where}{row.get('gpu_name') or 'GPU'}, {shape}; profile {row.get('id', '-')})",
             f"  {'':<30} {'measured':>12}  {'modelled':>12}  {'meas/model':>10}"]
    for name, measured, model, ratio in comparison(row):
        lines.append(f"  {name:<30} {measured:>12}  {model:>12}  {ratio:>10}")
    lines.append(f"  top stalls (cycles per issued instruction): {stalls_text(row)}")
    if row.get("model_binding"):
        lines.append(f"  model ({row.get('model_device')}): {row['model_binding']}-bound")
    return "\n".join(lines)
