"""The report's sections about the search itself: when the best was found, the families tried with
their statuses, and the ceilings the model predicts against the measured times of the fastest rows."""
from __future__ import annotations

from typing import Any

from autotune.backends.reference import contract_text
from autotune.explain.ladder import Line, ReportData
from autotune.explain.roofline import pct_of_roofline
from autotune.explain.tally import statuses_seen


def fmt(value: Any, spec: str = ".2f", unit: str = "") -> str:
    return "—" if value is None else f"{value:{spec}}{unit}"


def of_cublas(data: ReportData, time_ms: float, row: dict[str, Any] | None = None) -> str:
    """% of cuBLAS: the row's own (its worker timed cuBLAS beside it), else against the shape's baselines."""
    if row and row.get("pct_cublas"):
        return fmt(row["pct_cublas"], ".1f", "%")
    return fmt(100 * data.cublas["time_ms"] / time_ms, ".1f", "%") if data.cublas else "no cuBLAS timing"


def progress_lines(data: ReportData) -> list[str]:
    out = []
    for study, trials in data.progress.items():
        best = max(trials, key=lambda t: t[1])
        out.append(f"- `{study}`: {len(trials)} trial{'' if len(trials) == 1 else 's'}; best {best[1]:.2f} TFLOP/s, first reached at trial "
                   f"{best[0]}.")
    return out or ["- no trials recorded for this shape."]


def improvements_table(data: ReportData) -> list[str]:
    """Each trial that set a new best time for its study."""
    if not data.improvements:
        return ["No trial produced a verified kernel, so there is no best to follow."]
    out = ["| study | trial | kernel | ms | TFLOP/s | % of cuBLAS | result id |", "|---|--:|---|--:|--:|--:|--:|"]
    out += [f"| `{s.study}` | {s.number} | `{s.kernel}` | {s.time_ms:.4g} | {s.tflops:.2f} | "
            f"{of_cublas(data, s.time_ms)} | {s.result_id} |" for s in data.improvements]
    return out


def families_table(data: ReportData) -> list[str]:
    """Each family tried: its configs by status, and its fastest verified one against cuBLAS."""
    statuses = statuses_seen(data.families)
    out = ["| family | configs | " + " | ".join(s.replace("_", " ") for s in statuses)
           + " | fastest verified | ms | TFLOP/s | % of cuBLAS |",
           "|---|--:|" + "--:|" * len(statuses) + "---|--:|--:|--:|"]
    for t in data.families:
        counts = " | ".join(str(t.statuses.get(s, 0)) for s in statuses)
        best = (f"`{t.best['kernel']}` | {t.best['time_ms']:.4g} | {t.best['tflops']:.2f} | "
                f"{of_cublas(data, t.best['time_ms'], t.best)}") if t.best else "none verified | — | — | —"
        out.append(f"| {t.family} | {t.total} | {counts} | {best} |")
    return out


def ceiling_text(model: dict[str, Any]) -> str:
    """The binding ceiling, named: 'shared 13.38'."""
    return f"{model['binding']} {model['predicted_tflops']:.2f}" if model else "no model"


def predicted_ms(data: ReportData, model: dict[str, Any]) -> str:
    """The time the binding ceiling allows at this shape."""
    if not model.get("predicted_tflops"):
        return "—"
    M, N, K = data.shape
    return f"{2 * M * N * K / model['predicted_tflops'] / 1e9:.4g}"


def top_table(data: ReportData) -> list[str]:
    out = ["| rank | result id | config | ms | ceiling ms | TFLOP/s | % of cuBLAS | % of roofline | LDS/FFMA "
           "| binding ceiling | measured / ceiling | accuracy |",
           "|--:|--:|---|--:|--:|--:|--:|--:|--:|---|--:|---|"]
    for line in data.top:
        r, m = line.result, line.model
        out.append(f"| {line.label} | {r['id']} | `{line.config.name}` | {r['time_ms']:.3f} | {predicted_ms(data, m)} | "
                   f"{r['tflops']:.2f} | {fmt(r.get('pct_cublas'), '.1f', '%')} | "
                   f"{pct_of_roofline(*data.shape, r['time_ms'], data.spec):.1f}% | "
                   f"{fmt(m.get('lds_per_ffma'), '.3g')} | {ceiling_text(m)} | {fmt(line.ratio, '.0%')} | "
                   f"{contract_text(r)} |")
    return out + why_no_model(data.top)


def why_no_model(lines: list[Line]) -> list[str]:
    """Where a row has no ceilings, why: once when every row shares the reason."""
    missing = [x for x in lines if not x.model]
    if not missing:
        return []
    if len({x.why for x in missing}) == 1:
        which = "No row has" if len(missing) == len(lines) else f"{len(missing)} of the {len(lines)} rows have no"
        return ["", f"{which} ceilings: {missing[0].why}."]
    return ["", *(f"- {x.label} (`{x.config.name}`): {x.why}." for x in missing)]


def energy_table(data: ReportData) -> list[str]:
    """Each family's best and cuBLAS with their power (backends/cuda/energy.py); nothing where none was read."""
    rows = [x.result for x in data.steps if x.measured]
    cublas = data.cublas or {}
    if not any(r.get("watts") for r in rows) and not cublas.get("watts"):
        return []
    out = ["### Speed and energy: each family's best and cuBLAS", "",
           "W: the board's average power over runs of the kernel back to back right after its timed runs, from "
           "NVML's energy counter; GFLOP/s/W = TFLOP/s × 1000 / W, the GFLOP a joule buys "
           "(docs/measuring.md, Energy). — where the power was not read.", "",
           "| family's best | config | ms | TFLOP/s | W | GFLOP/s/W | cuBLAS W beside it | result id |",
           "|---|---|--:|--:|--:|--:|--:|--:|"]
    out += [f"| {r['family']} | `{r['kernel']}` | {r['time_ms']:.3f} | {r['tflops']:.2f} | {fmt(r.get('watts'), '.0f')} | "
            f"{fmt(r.get('gflops_per_watt'), '.3g')} | {fmt(r.get('cublas_watts'), '.0f')} | {r['id']} |" for r in rows]
    if cublas:
        out.append(f"| cuBLAS | {cublas['library']}, median of {cublas['count']} baselines | {cublas['time_ms']:.3f} | "
                   f"{cublas['tflops']:.2f} | {fmt(cublas.get('watts'), '.0f')} | "
                   f"{fmt(cublas.get('gflops_per_watt'), '.3g')} |  |  |")
    return [*out, ""]
