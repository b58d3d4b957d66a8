"""The kernel families, one module each (its parameters, constraints with their reasons, derived
geometry) plus its template in the top-level templates/ folder. A new family is one module
here, one template, and one line in FAMILIES."""
from __future__ import annotations

from typing import Any, Mapping

from autotune.errors import SpaceError
from autotune.families.blocked import BLOCKED
from autotune.families.naive import NAIVE
from autotune.families.ozaki import OZAKI
from autotune.families.ozakiwg import OZAKIWG
from autotune.families.skinny import SKINNY
from autotune.families.splitk import SPLITK
from autotune.families.streamk import STREAMK
from autotune.families.tailsplit import TAILSPLIT
from autotune.families.tall import TALL
from autotune.families.tf32x3 import TF32X3
from autotune.families.tf32x3wg import TF32X3WG
from autotune.families.tiled import TILED
from autotune.space import Config, Family, make_config

FAMILIES: dict[str, Family] = {f.name: f for f in (NAIVE, TILED, BLOCKED, SPLITK, TAILSPLIT, STREAMK, SKINNY, TALL, TF32X3, TF32X3WG, OZAKI, OZAKIWG)}
# The order in which family defaults are tried where nothing is recorded (the dispatcher's default, a
# search's and a first-use job's fitted defaults): blocked first, the family that takes any shape fastest.
DEFAULT_ORDER = (BLOCKED.name, *(name for name in FAMILIES if name != BLOCKED.name))

# The accuracy contracts a search can run under (each family declares its own: Family.precision).
# fp32: every product and sum in FP32 units. fp32-tc: FP32 in and out, products on tensor cores from
# TF32 parts (the tensor-core families): FP32-class error rather than FP32 arithmetic, so such a
# family is searched only when the user asks for it.
PRECISIONS = ("fp32", "fp32-tc")
TENSOR_CORE = tuple(name for name, f in FAMILIES.items() if f.precision == "fp32-tc")

__all__ = ["BLOCKED", "DEFAULT_ORDER", "FAMILIES", "NAIVE", "OZAKI", "OZAKIWG", "PRECISIONS", "SKINNY", "SPLITK", "STREAMK", "TAILSPLIT", "TALL", "TENSOR_CORE",
           "TF32X3", "TF32X3WG", "TILED", "config_of_row", "families_for", "precision_of"]


def families_for(precision: str) -> list[str]:
    """The families a search under this contract may use, in FAMILIES order."""
    if precision not in PRECISIONS:
        raise SpaceError(f"unknown precision {precision!r}; choose from {', '.join(PRECISIONS)}")
    return [name for name, f in FAMILIES.items() if precision == "fp32-tc" or f.precision == "fp32"]


def precision_of(family: str) -> str:
    """The contract a family's kernels are verified under (backends.reference says what each means).
    A family's, not a search's: an FP32 family does FP32 arithmetic whatever the search allows, so
    its row means the same in every search and is reused across them; a tensor-core family's rows
    always meet the float64 comparison. `--precision` picks which families may run."""
    return FAMILIES[family].precision


def config_of_row(row: Mapping[str, Any]) -> Config:
    """The config a stored result row was measured for. A parameter added after the row was
    written (no column, or NULL) takes the value the kernels had before it (`Param.absent`)."""
    family = FAMILIES.get(row["family"])
    if family is None:
        raise SpaceError(f"result {row.get('id')} is of family {row['family']!r}, which this version does not "
                         f"know; known: {', '.join(FAMILIES)}")
    values: dict[str, Any] = {}
    for p in family.params:
        value = row.get(p.name)
        if value is None and p.absent is None:
            raise SpaceError(f"result {row.get('id')} ({row.get('kernel')}) has no value for {p.name}")
        values[p.name] = p.absent_at(values) if value is None else value
    return make_config(family, values)
