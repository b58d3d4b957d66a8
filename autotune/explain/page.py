"""The report's markdown page: words and tables around the numbers of report.build()."""
from __future__ import annotations

from pathlib import Path

from autotune.backends.reference import contract_text
from autotune.explain.ladder import FLAT_TS, Line, ReportData, verdict
from autotune.explain.profile import comparison, stalls_text
from autotune.explain.roofline import pct_of_roofline, roofline
from autotune.explain.sections import (
    ceiling_text,
    energy_table,
    families_table,
    fmt,
    improvements_table,
    progress_lines,
    top_table,
    why_no_model,
)
from autotune.families import TILED

PAGE = "report.md"
PLOTS = {"ladder": "ladder.png", "ceilings": "ceilings_vs_T.png", "progress": "progress.png"}


def plot_name(data: ReportData, key: str) -> str:
    """A shape's PNG: one set per shape, side by side in the report's folder."""
    return f"{data.stem}-{PLOTS[key]}"


def ladder_row(line: Line) -> str:
    m = line.model
    ratio = fmt(line.ratio, ".0%")
    if line.measured:
        r = line.result
        cells = [fmt(r["time_ms"], ".3f"), fmt(r["tflops"]), fmt(r.get("pct_cublas"), ".1f", "%"),
                 fmt(r.get("pct_peak"), ".1f", "%"), str(r["id"])]
    elif line.row is not None:  # compiled but wrong or failed: say so, with the reason
        cells = [f"{line.row['status']}: {line.row.get('reason') or ''}", "", "", "", str(line.row["id"])]
    else:
        cells = [f"not measured: `{line.command}`", "", "", "", ""]
    return "| " + " | ".join([line.label, f"`{line.config.name}`", *cells, ceiling_text(m), ratio]) + " |"


def ladder_table(data: ReportData, lines: list[Line]) -> list[str]:
    """The lines, then cuBLAS: the chapter's ladder or the search's (each family's best)."""
    out = ["| kernel | config | ms | TFLOP/s | % of cuBLAS | % of peak | result id | binding ceiling (TFLOP/s) "
           "| measured / ceiling |", "|---|---|--:|--:|--:|--:|--:|---|--:|"]
    out += [ladder_row(x) for x in lines]
    if data.cublas:
        c = data.cublas
        out.append(f"| cuBLAS | {c['library']}, median of {c['count']} baselines | {c['time_ms']:.3f} | "
                   f"{c['tflops']:.2f} | 100.0% | {100 * c['tflops'] / data.spec.fma_tflops:.1f}% |  | — | — |")
    return out


def ceilings_table(data: ReportData) -> list[str]:
    out = ["| T | pad | FFMA | LDS | LDS.128 | wavefronts / FFMA | FMA | shared | global | binding "
           "| occupancy (warps/SM) | measured | measured / shared ceiling |",
           "|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|--:|--:|--:|"]
    for line in data.ladder:
        if line.config.family.name != TILED.name or not line.model:
            continue
        m, v = line.model, line.config.values
        measured = line.result["tflops"] if line.measured else None
        share = measured / m["ceil_shared"] if measured and m.get("ceil_shared") else None
        out.append(f"| {v['T']} | {v['pad']} | {m['ffma']} | {m['lds32']} | {m['lds128']} | "
                   f"{m['wavefronts_per_ffma']:.3g} | {m['ceil_fma']:.2f} | {fmt(m['ceil_shared'])} | "
                   f"{m['ceil_global']:.2f} | {m['binding']} | {m['occupancy']} | "
                   f"{fmt(measured) if line.measured else 'not measured'} | {fmt(share, '.0%')} |")
    return out


def roofline_lines(data: ReportData) -> list[str]:
    """The shape's roofline under the report's spec, and how close the best row and cuBLAS come."""
    r = roofline(*data.shape, data.spec)
    bound = "memory-bound" if r.memory_bound else "compute-bound"
    out = [f"Roofline at this shape: {r.ms:.4g} ms, **{bound}** (FMA floor {r.fma_ms:.4g} ms: 2MNK at the FMA "
           f"peak; DRAM floor {r.dram_ms:.4g} ms: A and B read once and C written once at "
           f"{data.spec.dram_gbps:.0f} GB/s)."]
    if data.best:
        out.append(f"The best verified kernel runs at {pct_of_roofline(*data.shape, data.best.result['time_ms'], data.spec):.1f}% "
                   f"of it" + (f", cuBLAS at {pct_of_roofline(*data.shape, data.cublas['time_ms'], data.spec):.1f}%."
                               if data.cublas else "."))
        out.append(f"Its accuracy: {contract_text(data.best.result)}.")
    return out


def header(sections: list[ReportData]) -> list[str]:
    data = sections[0]
    s, shapes = data.spec, ", ".join(f"[{x.stem}](#{anchor(x)})" for x in sections)
    return [
        f"# What the search found: `{data.db_path}`",
        "",
        f"Shapes searched: {shapes}. Device spec for the model: preset `{data.preset}` = "
        f"{s.name}, {s.sm_count} SMs at {s.clock_mhz:.0f} MHz, {s.dram_gbps:.0f} GB/s DRAM, FP32 FMA peak "
        f"{s.fma_tflops:.1f} TFLOP/s. SASS counts come from the rows or from compiling each measured source "
        f"offline (NVRTC + nvdisasm); this page was made without a GPU.",
    ]


def anchor(data: ReportData) -> str:
    """The shape heading's anchor as markdown renderers make it."""
    return f"sgemm-{'x'.join(map(str, data.shape))}-backend-{data.backend}".lower()


NOTES = [
    "How to read the ceilings (all in TFLOP/s; the prediction is the lowest, and *binding* names it):",
    "",
    "- **FMA**: every FP32 lane retires one FFMA (2 FLOP) per clock at the spec's clock.",
    "- **shared**: one shared-memory wavefront per SM per clock against four warp FFMA per clock. The hot "
    "loop's LDS instructions are costed by a bank simulation of warp 0; the ceiling is "
    "peak × min(1, FFMA / (4 × wavefronts)). Two loads per FFMA give peak/8; the compiler's merged "
    "LDS.128 A-reads (1.25 wavefronts per FFMA) give peak/5. Neither depends on T.",
    "- **global**: every operand read from DRAM once per tile, T/4 FLOP per byte (1/4 for naive). It "
    "ignores L1/L2, so the naive kernels run far *above* it (measured/ceiling > 100%): the caches serve "
    "most of their loads (seed chapter, section 4). For them it is a bound on DRAM traffic, not on speed.",
    "- **roofline** (the shape's, not a kernel's): the larger of the FMA floor, 2MNK at the FMA peak, and the "
    "DRAM floor, every operand read once and C written once at the DRAM bandwidth. *% of roofline* = roofline "
    "time over measured time; where the DRAM floor is the larger the shape is memory-bound.",
    "- Occupancy (warps per SM) is reported in the tables but does not enter the prediction.",
    "- *measured / ceiling* = measured TFLOP/s over the binding ceiling.",
]


def profile_lines(data: ReportData) -> list[str]:
    """Each stored Nsight Compute profile of the shape, measured / modelled (explain.profile); none: no section."""
    if not data.profiles:
        return []
    names = [name for name, *_ in comparison(data.profiles[0])]
    out = ["### Profiled with Nsight Compute: measured / modelled", "",
           "Each cell is the profiler's number / the model's (`autotune profile`; the model's DRAM floor reads A "
           "and B once and writes C once, its tile bound reads every operand once per tile). Stalls: cycles per "
           "issued instruction.", "",
           "| kernel | result id | GPU | " + " | ".join(names) + " | top stalls |",
           "|---|--:|---|" + "--:|" * len(names) + "---|"]
    for row in data.profiles:
        cells = [measured if model == "—" else f"{measured} / {model}" for _, measured, model, _ in comparison(row)]
        out.append(f"| `{row['kernel']}` | {fmt(row.get('result_id'), 'd')} | {row.get('gpu_name') or ''} | "
                   + " | ".join(cells) + f" | {stalls_text(row)} |")
    return [*out, ""]


def shape_section(data: ReportData) -> list[str]:
    gpus = ", ".join(data.gpus) or "no GPU rows"
    return [
        f"## SGEMM {'x'.join(map(str, data.shape))}, backend {data.backend}", "",
        f"Measured on {gpus}. " + " ".join(roofline_lines(data)), "",
        "### Progress: when the best was found", "", *progress_lines(data), "", *improvements_table(data), "",
        f"![Best TFLOP/s so far against trial number]({plot_name(data, 'progress')})", "",
        "### The families tried", "", *families_table(data), "",
        "### The ladder: each family's best", "", *ladder_table(data, data.steps), *why_no_model(data.steps), "",
        *([f"![Each family's best with its binding ceiling]({plot_name(data, 'ladder')})", ""] if data.steps else []),
        *energy_table(data),
        "### The ten fastest verified configs: ceilings against measured", "", *top_table(data), "",
        *profile_lines(data),
        *flat_section(data),
    ]


def flat_section(data: ReportData) -> list[str]:
    """The chapter's study, only where the tiled family has rows at this shape."""
    if not data.flat_in_T:
        return []
    flat = ", ".join(f"T={T}" for T in FLAT_TS)
    return [
        "### Does the shared-memory ceiling stay flat in T?", "",
        *[f"- {v}" for v in verdict(data)], "",
        f"The chapter's claim: tiling divides global traffic by T, but each FFMA still needs shared loads, so "
        f"the shared-memory ceiling is the same for {flat}.", "",
        "#### The chapter's ladder", "", *ladder_table(data, [*data.ladder, *([data.best] if data.best else [])]), "",
        "#### Ceilings against T (the chapter's tiled kernel, bx = by = T)", "", *ceilings_table(data), "",
        f"![Measured TFLOP/s against T with the FMA, shared and global ceilings]({plot_name(data, 'ceilings')})", "",
    ]


def write_page(sections: list[ReportData], folder: Path) -> Path:
    """report.md: a section per shape, then the model's notes and the command that made it."""
    data = sections[0]
    lines = [*header(sections), ""]
    for x in sections:
        lines += shape_section(x)
    lines += ["## The model", "", *NOTES, "", "## Reproduce", "",
              f"`autotune report --db {data.db_path} --device-preset {data.preset}` (add --M, --N, --K for fewer shapes)", ""]
    path = folder / PAGE
    path.write_text("\n".join(lines))
    return path
