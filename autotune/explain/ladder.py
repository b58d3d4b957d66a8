"""What a report says: one Line per kernel, the report's data, and the verdict on the flat
shared-memory ceiling (the design card's claim) computed from them."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from autotune.backends.outcome import OK
from autotune.explain.model import DeviceSpec
from autotune.explain.tally import FamilyTally, Step
from autotune.families import TILED
from autotune.space import Config

FLAT_TS = (8, 16, 32)  # the tile sizes the flat-ceiling claim is about
BAND = (0.5, 1.0)  # the ceiling explains a kernel that reaches between half of it and all of it


@dataclass
class Line:
    """One kernel of the report: its config, its measured row (if any) and its model columns."""

    label: str
    config: Config
    row: dict[str, Any] | None
    model: dict[str, Any]
    command: str = ""  # how to measure it, when it is not measured
    why: str = ""  # why there is no model, when there is none

    @property
    def measured(self) -> bool:
        return self.row is not None and self.row["status"] == OK

    @property
    def result(self) -> dict[str, Any]:
        """The row, where there is one: a measured line's (the top lines and the best always have theirs)."""
        if self.row is None:
            raise ValueError(f"{self.label} ({self.config.name}) has no result row")
        return self.row

    @property
    def ratio(self) -> float | None:
        if not self.measured or not self.model.get("predicted_tflops"):
            return None
        return self.result["tflops"] / self.model["predicted_tflops"]


@dataclass
class ReportData:
    shape: tuple[int, int, int]
    db_path: str
    preset: str
    spec: DeviceSpec
    gpus: list[str]
    ladder: list[Line]
    best: Line | None
    top: list[Line]
    cublas: dict[str, Any] | None
    progress: dict[str, list[tuple[int, float]]] = field(default_factory=dict)
    profiles: list[dict[str, Any]] = field(default_factory=list)  # store.profiles rows of this shape
    backend: str = "cuda"
    families: list[FamilyTally] = field(default_factory=list)  # each family tried, by status
    steps: list[Line] = field(default_factory=list)  # the search's ladder: each family's best, slowest first
    improvements: list[Step] = field(default_factory=list)  # when the best was found

    @property
    def flat_in_T(self) -> bool:
        """The chapter's flat-in-T study is shown only where the tiled family was measured (see report.py)."""
        return bool(self.ladder)

    @property
    def stem(self) -> str:
        """The shape's name in file names: 4096x4096x4096, with the backend unless it is cuda."""
        shape = "x".join(map(str, self.shape))
        return shape if self.backend == "cuda" else f"{shape}-{self.backend}"

    def line(self, T: int, pad: int) -> Line:
        return next(x for x in self.ladder if x.config.family.name == TILED.name
                    and x.config.values["T"] == T and x.config.values["pad"] == pad)


# --------------------------------------------------------------------------- the flat-ceiling verdict

def flat_ceiling(data: ReportData, pad: int = 0) -> dict[int, float | None]:
    return {T: data.line(T, pad).model.get("ceil_shared") for T in FLAT_TS}


def verdict(data: ReportData) -> list[str]:
    """Says, with the numbers, whether the data confirm the flat shared-memory ceiling."""
    out = []
    for pad in (0, 1):
        ceilings = flat_ceiling(data, pad)
        known = [c for c in ceilings.values() if c is not None]
        if len(known) < len(ceilings):
            out.append(f"pad={pad}: no SASS model (nvdisasm missing), so no shared ceiling to compare.")
            continue
        flat = max(known) - min(known) <= 1e-9 * max(known)
        nums = ", ".join(f"T={T}: {c:.2f}" for T, c in ceilings.items())
        out.append(f"Shared-memory ceiling, pad={pad} ({nums} TFLOP/s): "
                   + ("**identical for every T**." if flat else "**not flat**: it changes with T."))
    out.append(_band_sentence(data))
    out.append("Binding ceiling by T (pad 0): " + "; ".join(
        f"T={T}: {ceiling_name(data.line(T, 0).model)}" for T in FLAT_TS) + ". Where it is not shared, "
        "the model expects the global (DRAM) ceiling to cap the kernel before shared memory does.")
    return out


def ceiling_name(model: dict[str, Any]) -> str:
    return f"{model['binding']} {model['predicted_tflops']:.2f} TFLOP/s" if model else "no model"


def _band_sentence(data: ReportData) -> str:
    parts, inside = [], True
    for T in (16, 32):
        line = data.line(T, 0)
        if line.ratio is None or line.model.get("ceil_shared") is None:
            return f"T={T} (pad 0) is not measured, so the band cannot be checked: run `{line.command}`."
        share = line.result["tflops"] / line.model["ceil_shared"]
        inside &= BAND[0] <= share <= BAND[1]
        parts.append(f"T={T}: {line.result['tflops']:.2f} TFLOP/s = {100 * share:.0f}% of its shared ceiling")
    flat = len({round(c or 0, 9) for c in flat_ceiling(data).values()}) == 1
    word = "**confirm**" if inside and flat else "**do not confirm**"
    return (f"Measured, pad 0: {'; '.join(parts)}. The data {word} the flat ceiling with the measured "
            f"throughput between {BAND[0]:.0%} and {BAND[1]:.0%} of it.")
