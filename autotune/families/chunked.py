"""What the families that split K on blocked's template (splitk, tailsplit, streamk) take of blocked's space:
its parameters and constraints less those their kernels cannot have."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace

from autotune.space import Constraint, Param, Params, Value


def chunked_params(params: tuple[Param, ...], defaults: Mapping[str, Value | Callable[[Params], Value]],
                   al: tuple[int, ...] = (0,)) -> tuple[Param, ...]:
    """Blocked's parameters for families splitk and tailsplit: without BLAS (their turnstiles are per
    tile, not per (batch, tile)) and CS (their blocks add partials into C or a workspace), PB fixed at 0
    and AL to the values `al` (where every tile's K is split the product is short beside a transpose or
    copy of the whole of B), and the family's own `defaults` in place of blocked's."""
    fixed = {"PB": (0,), "AL": al}
    kept = (replace(p, values=fixed[p.name], default=0) if p.name in fixed else p for p in params
            if p.name not in ("BLAS", "CS"))
    return tuple(replace(p, default=defaults[p.name]) if p.name in defaults else p for p in kept)


def chunked_constraints(constraints: tuple[Constraint, ...]) -> tuple[Constraint, ...]:
    """Blocked's constraints for splitk and tailsplit: those that read BLAS or CS, which they lack, left out."""
    return tuple(c for c in constraints if not {"BLAS", "CS"} & set(c.reads))
