"""The report's three PNGs (matplotlib, Agg: no display is needed or wanted)."""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the backend)
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator, ScalarFormatter  # noqa: E402

from autotune.explain.ladder import ReportData  # noqa: E402
from autotune.explain.page import plot_name  # noqa: E402
from autotune.families import TILED  # noqa: E402

COLORS = {"fma": "tab:red", "shared": "tab:blue", "global": "tab:green", "measured": "black"}
DPI = 130
Y_TICKS = (0.5, 1, 2, 3, 5, 7, 10, 15, 20, 30, 50, 70, 100)  # TFLOP/s on a log axis, labelled plainly


def _title(data: ReportData, what: str) -> str:
    return f"{what}\nSGEMM {'x'.join(map(str, data.shape))}, {', '.join(data.gpus) or 'no GPU'}"


def _save(fig: plt.Figure, path: Path) -> None:
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)


def plot_ladder(data: ReportData, path: Path) -> None:
    """The search's ladder (each family's best): bars of measured TFLOP/s, a tick at each binding ceiling."""
    lines = data.steps
    fig, ax = plt.subplots(figsize=(9, 0.45 * len(lines) + 2))
    y = list(range(len(lines)))[::-1]
    measured = [x.result["tflops"] if x.measured else 0.0 for x in lines]
    ax.barh(y, measured, color="0.55", label="measured")
    for yi, x in zip(y, lines):
        if not x.measured:
            ax.text(0.3, yi, "not measured", va="center", fontsize=8, color="0.3")
        elif x.ratio is not None:
            ax.text(x.result["tflops"] + 0.3, yi + 0.22, f"{x.result['tflops']:.2f} ({x.ratio:.0%} of ceiling)",
                    va="center", fontsize=7)
        if x.model:
            ax.plot([x.model["predicted_tflops"]] * 2, [yi - 0.4, yi + 0.4], color=COLORS[x.model["binding"]], lw=2.5)
    for name, color in COLORS.items():
        if name != "measured":
            ax.plot([], [], color=color, lw=2.5, label=f"binding ceiling: {name}")
    if data.cublas:
        ax.axvline(data.cublas["tflops"], color="purple", ls="--", label=f"cuBLAS {data.cublas['tflops']:.1f}")
    ax.set_yticks(y, [x.label for x in lines])
    ax.set_xlabel("TFLOP/s (FP32)")
    ax.set_title(_title(data, "Each family's best: measured throughput and its binding ceiling"))
    ax.legend(loc="upper right", fontsize=8)
    ax.grid(axis="x", alpha=0.3)
    _save(fig, path)


def plot_ceilings(data: ReportData, path: Path) -> None:
    """Measured TFLOP/s against T, with the FMA, shared (per pad) and global ceilings."""
    fig, ax = plt.subplots(figsize=(8, 6.5))
    for pad, style, marker in ((0, "-", "o"), (1, ":", "s")):
        lines = [x for x in data.ladder if x.config.family.name == TILED.name and x.config.values["pad"] == pad
                 and x.model]
        Ts = [x.config.values["T"] for x in lines]
        shared = [x.model["ceil_shared"] for x in lines]
        waves = f" ({lines[0].model['wavefronts_per_ffma']:.3g} wavefronts/FFMA)" if lines else ""
        ax.plot(Ts, shared, style, color=COLORS["shared"], lw=2, label=f"shared ceiling, pad={pad}{waves}")
        if shared:
            ax.annotate(f"{shared[-1]:.1f}", (Ts[-1], shared[-1]), xytext=(6, 0), textcoords="offset points",
                        va="center", fontsize=8, color=COLORS["shared"])
        got = [(T, x.result["tflops"]) for T, x in zip(Ts, lines) if x.measured]
        if got:
            ax.plot(*zip(*got), marker, color=COLORS["measured"], ms=7, mfc="none" if pad else "black",
                    label=f"measured, pad={pad}")
        for T, value in got:
            ax.annotate(f"{value:.2f}", (T, value), xytext=(7, -3), textcoords="offset points", fontsize=8)
    tiled = [x for x in data.ladder if x.config.family.name == TILED.name and x.config.values["pad"] == 0 and x.model]
    Ts = [x.config.values["T"] for x in tiled]
    ax.plot(Ts, [x.model["ceil_global"] for x in tiled], "--", color=COLORS["global"], lw=2,
            label="global ceiling (DRAM once per tile, T/4 FLOP/B)")
    if tiled:
        fma = tiled[0].model["ceil_fma"]
        ax.axhline(fma, color=COLORS["fma"], lw=2, label=f"FMA ceiling (peak, {fma:.1f})")
    if data.cublas:
        ax.axhline(data.cublas["tflops"], color="purple", ls="-.", lw=1.2,
                   label=f"cuBLAS (measured, {data.cublas['tflops']:.1f})")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.xaxis.set_major_locator(FixedLocator(Ts))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.yaxis.set_major_locator(FixedLocator(Y_TICKS))
    ax.yaxis.set_minor_locator(NullLocator())
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.set_xlabel("tile edge T (bx = by = T: one output per thread)")
    ax.set_ylabel("TFLOP/s (FP32, log scale)")
    ax.set_title(_title(data, f"Tiled kernel against T: the shared-memory ceiling is flat ({data.spec.name} model)"))
    if Ts:  # room on the right for the ceiling labels
        ax.set_xlim(Ts[0] / 1.25, Ts[-1] * 1.35)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2)
    ax.grid(alpha=0.3)
    _save(fig, path)


def plot_progress(data: ReportData, path: Path) -> None:
    """Best-so-far TFLOP/s against trial number, each trial as a faint dot."""
    fig, ax = plt.subplots(figsize=(8, 5))
    for study, trials in data.progress.items():
        numbers = [n for n, _ in trials]
        best, so_far = 0.0, []
        for _, value in trials:
            best = max(best, value)
            so_far.append(best)
        ax.scatter(numbers, [v for _, v in trials], s=8, alpha=0.35, label="each trial (0 = not verified)")
        ax.step(numbers, so_far, where="post", lw=2, label=f"best so far: {study}")
    if data.cublas:
        ax.axhline(data.cublas["tflops"], color="purple", ls="--", label=f"cuBLAS {data.cublas['tflops']:.1f}")
    ax.set_xlabel("trial number")
    ax.set_ylabel("TFLOP/s (FP32)")
    ax.set_title(_title(data, "Search progress"))
    top = max([data.cublas["tflops"] if data.cublas else 0.0, *(v for t in data.progress.values() for _, v in t)])
    ax.set_ylim(bottom=0, top=1.3 * top or 1.0)  # room above the lines for the legend
    ax.legend(fontsize=7, loc="upper left")
    ax.grid(alpha=0.3)
    _save(fig, path)


def write_plots(data: ReportData, folder: Path) -> list[Path]:
    """The shape's PNGs: progress always, the ladder where a kernel was verified, the ceilings against T
    where the flat-in-T study is shown."""
    plots = {"progress": plot_progress, **({"ladder": plot_ladder} if data.steps else {}),
             **({"ceilings": plot_ceilings} if data.flat_in_T else {})}
    paths = []
    for key, plot in plots.items():
        paths.append(folder / plot_name(data, key))
        plot(data, paths[-1])
    return paths
