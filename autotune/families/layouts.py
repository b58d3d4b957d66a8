"""Operand layouts (cuBLAS's NN, NT, TN, TT) as kernel parameters, and narrowing the families of a
search to one layout or to chosen parameter values."""
from __future__ import annotations

from typing import Any, Mapping

from autotune.errors import AutotuneError
from autotune.families import FAMILIES
from autotune.space import Family, narrow

TRANSPOSES = ("TA", "TB")
# Parameters whose default follows TA and TB (blocked's PB and RT are choices for a transposed B and
# for an operand stored along K): another layout's config read as this one's takes this one's defaults.
FOLLOW_LAYOUT = ("PB", "RT")
PROLOGUE_PARAMS = ("PB", "AL")  # blocked's parameters that add a prologue for tight operands (none with BLAS=1)
# blocked's parameters that only the plain signature takes, 0 for BLAS=1: the prologues, and C staged (CS=1)
PLAIN_ONLY = (*PROLOGUE_PARAMS, "CS")
BLAS_FAMILY = "blocked"
LAYOUTS = {"NN": (0, 0), "NT": (0, 1), "TN": (1, 0), "TT": (1, 1)}  # cuBLAS's names: op(A), then op(B)


def layout_name(values: Mapping[str, Any]) -> str:
    """The layout of a config's values or a result row: "NT" is TA=0, TB=1 (absent or NULL: 0)."""
    return "".join("T" if values.get(name) else "N" for name in TRANSPOSES)


def layout_choices(layout: str) -> dict[str, list[str]]:
    """The parameter values of a layout: NT is TA=0, TB=1."""
    if layout not in LAYOUTS:
        raise AutotuneError(f"unknown layout {layout!r}; one of {', '.join(LAYOUTS)} (NT: nn.Linear's x * W^T)")
    return {name: [str(v)] for name, v in zip(TRANSPOSES, LAYOUTS[layout])}


def narrow_to(families: list[Family], choices: dict[str, list[str]]) -> list[Family]:
    """Restrict each family to the chosen values of the parameters it has (search a sub-space)."""
    for name in choices:
        # TA=0 or TB=0 alone is what a family without transposes computes (an NN layout: cover's products)
        # TA or TB that no family has: the check below says which families read transposed operands
        if not any(name in names(f) for f in families) and name not in TRANSPOSES:
            raise AutotuneError(f"no family searched has a parameter {name!r}; "
                                f"see `autotune space` for each family's parameters")
    # A family without TA or TB computes C = A * B only (both 0): it has no kernel of the other layouts.
    kept = [f for f in families if all(n in names(f) or "0" in choices[n] for n in TRANSPOSES if n in choices)]
    if not kept:
        given = ", ".join(f"{n}={','.join(v)}" for n, v in choices.items())
        raise AutotuneError(f"no family searched reads transposed operands ({given}); the register-blocked "
                            f"ones do: --family {','.join(f.name for f in families_with_transposes())}")
    # Unless asked for (-p, --layout, a batch: for_batch), a search is of C = A * B as cuBLAS's NN
    # with plain arguments: TA=TB=0 (a kernel of another layout would be timed on transposed copies
    # of the operands and then be "the best" for a call it cannot serve), BLAS=0 (at one batch a
    # search measures BLAS=1 kernels as plain products).
    return [narrow(f, {n: v for n, v in {**_plain_defaults(f), **choices}.items() if n in names(f)}) for f in kept]


def _plain_defaults(family: Family) -> dict[str, list[str]]:
    """TA, TB and BLAS at 0, each unless the family was narrowed to exclude 0 already."""
    return {n: ["0"] for n in (*TRANSPOSES, "BLAS") if n in names(family) and 0 in family.param(n).values}


def for_batch(families: list[Family], batch: int) -> list[Family]:
    """The families that compute a strided batch (batch > 1: BLAS=1 kernels, the batch on grid z),
    narrowed to those kernels; all of them at one batch."""
    if batch == 1:
        return families
    kept = [f for f in families if "BLAS" in names(f)]
    if not kept:
        raise AutotuneError(f"--batch {batch} needs BLAS=1 kernels, which none of the families searched has; "
                            f"the register-blocked family has them: --family {BLAS_FAMILY}")
    # BLAS=1 kernels have no prologue (blocked's PB=1 transposes a tight B, AL=1 copies tight A and B: one product's)
    # and store C directly (blocked's CS=1 stages the plain signature's C only). TA and TB are left whole: the
    # layout's narrowing (narrow_to), which every caller applies next, picks them (TT, or NN by default).
    batched = {"BLAS": ["1"], **{name: ["0"] for name in PLAIN_ONLY}}
    return [narrow(f, {n: v for n, v in batched.items() if n in names(f)}) for f in kept]


def names(family: Family) -> set[str]:
    return {p.name for p in family.params}


def families_with_transposes() -> list[Family]:
    return [f for f in FAMILIES.values() if "TA" in names(f)]
