"""A config's launch grid as a formula of the problem shape, for launchers that run it at any
shape: the family's own `geometry` and `shape_rules` evaluated with symbolic M and N (space.expr
says why this way), so the grid is written once, in the family's module.

The formula is C and Python text over M and N (long long in C), plus the condition under which
the family's shape rules accept the shape (e.g. split-K's turnstile count). Block and dynamic
shared memory must not depend on the shape: they are numbers. A family whose geometry cannot be
derived (space.expr.NotDerivable) has no formula; `derive_formula` returns the reason instead.

A grid sized by the device (Family.geometry_reads_limits: streamk's SKB blocks per SM) reads the SM
count as the name SMS, which the launchers read from the device they launch on: a number here would be
the default Limits()' (an H200's), and a launcher run on another GPU would size its grid for an H200.
Only the SM count is a name: no geometry reads another of Limits' numbers.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from autotune.space.config import Config, Launch, Limits, Prologue
from autotune.space.expr import Expr, Helper, NotDerivable, any_of, emit, explore, helpers, join, var, variables

SHAPE_VARS = ("M", "N")  # the grid depends on the output's rows and columns only
SMS = "sms"  # the SM count of the device a launcher runs on, where the grid reads it
PROLOGUE_VARS = ("M", "N", "K")  # a prologue's workspace may depend on K too


@dataclass(frozen=True)
class GridFormula:
    grid: tuple[Any, Any, Any]  # Expr or int each
    accepts: Any  # Expr or bool: the family's shape rules hold
    block: tuple[int, int, int]
    shared_bytes: int
    helpers: tuple[Helper, ...] = ()  # functions the grid or the rule calls, defined before them

    def helpers_c(self) -> str:
        return "\n".join(h.c for h in self.helpers)

    def helpers_python(self) -> str:
        return "\n".join(h.python for h in self.helpers)

    def grid_c(self) -> list[str]:
        return [emit(g, "c", top=True) for g in self.grid]

    def grid_python(self) -> list[str]:
        return [emit(g, "python", top=True) for g in self.grid]

    def accepts_c(self) -> str:
        return emit(self.accepts, "c", top=True)

    def accepts_python(self) -> str:
        return emit(self.accepts, "python", top=True)

    @property
    def reads_sms(self) -> bool:
        """Whether the grid reads the device's SM count (SMS), which the launchers then ask the device for."""
        return SMS in variables(*self.grid, self.accepts)

    def evaluate(self, M: int, N: int, limits: Limits = Limits()) -> tuple[tuple[int, int, int], bool]:
        """The grid and whether the shape is accepted, from the Python text (what the exported
        launcher runs) on a device of limits.sms SMs, for tests against the family's own geometry."""
        scope: dict[str, Any] = {"M": M, "N": N, SMS: limits.sms}
        exec(self.helpers_python(), scope)  # noqa: S102 - our own text, as the launcher runs it
        grid = tuple(int(eval(text, {}, scope)) for text in self.grid_python())  # noqa: S307 - our own text
        return (grid[0], grid[1], grid[2]), bool(eval(self.accepts_python(), {}, scope))  # noqa: S307


def derive_formula(config: Config) -> GridFormula | str:
    """The config's grid formula, or the reason it has none."""
    M, N = (var(v) for v in SHAPE_VARS)
    family, values = config.family, config.values
    rules_of: Callable[..., list[str]] = family.shape_rules

    def launch() -> Launch:
        return geometry(config, M, N)

    def rules() -> list[str]:
        return rules_of(values, M, N)

    try:
        launches = explore(launch)
        refusals = explore(rules)
    except NotDerivable as exc:
        return f"the {family.name} family's launch geometry cannot be written as a formula of M and N: {exc}"
    grid = [_part(launches, "grid", i) for i in range(3)]
    block = [_part(launches, "block", i) for i in range(3)]
    shared = join(launches, lambda launch: launch.shared_bytes)
    if isinstance(shared, Expr) or any(isinstance(b, Expr) for b in block):
        return f"the {family.name} family's block or shared memory depends on the shape"
    accepts = any_of(refusals, lambda reasons: not reasons)
    return GridFormula(grid=(grid[0], grid[1], grid[2]), accepts=accepts,
                       block=(int(block[0]), int(block[1]), int(block[2])), shared_bytes=int(shared),
                       helpers=tuple(helpers(*grid, accepts)))


def geometry(config: Config, M: Any, N: Any) -> Launch:
    """The config's launch at M x N (numbers or expressions), on a device whose SM count is the name SMS."""
    shape_only: Callable[..., Launch] = config.family.geometry  # called with expressions
    if config.family.geometry_reads_limits:
        return shape_only(config.values, M, N, Limits(sms=var(SMS)))  # type: ignore[arg-type]
    return shape_only(config.values, M, N)


def grid_at(config: Config, M: int, N: int) -> tuple[Any, Any, Any]:
    """The grid at one shape, the SM count left a name where it is read: what the launchers' comments
    show for the exported shape (a number there would be the default Limits()')."""
    launches = explore(lambda: geometry(config, M, N))
    return _part(launches, "grid", 0), _part(launches, "grid", 1), _part(launches, "grid", 2)


def _part(launches: list[tuple[Any, Launch]], field: str, i: int) -> Any:
    """One component of the grid or block over every path."""
    return join(launches, lambda launch: getattr(launch, field)[i])


@dataclass(frozen=True)
class PrologueFormula:
    """A prologue's grid (one-dimensional) and workspace as formulas of M, N and K (long long in C)."""

    blocks: Any  # Expr or int
    floats: Any  # Expr or int
    block: tuple[int, int, int]
    does: str

    def blocks_c(self) -> str:
        return emit(self.blocks, "c", top=True)

    def blocks_python(self) -> str:
        return emit(self.blocks, "python", top=True)

    def floats_c(self) -> str:
        return emit(self.floats, "c", top=True)

    def floats_python(self) -> str:
        return emit(self.floats, "python", top=True)

    def evaluate(self, M: int, N: int, K: int) -> tuple[int, int]:
        """Blocks and workspace floats from the Python text (what the exported launcher runs)."""
        scope = {"M": M, "N": N, "K": K}
        return int(eval(self.blocks_python(), {}, scope)), int(eval(self.floats_python(), {}, scope))  # noqa: S307


def derive_prologue(config: Config) -> PrologueFormula | None:
    """The config's prologue (space.Prologue) at a symbolic shape; None: it has none. A family's
    prologue is written without branches on the shape, so unlike a grid it always has a formula."""
    M, N, K = (var(v) for v in PROLOGUE_VARS)
    prologue_of: Callable[..., Prologue | None] = config.family.prologue  # called with expressions for M, N, K
    pre = prologue_of(config.values, M, N, K)
    if pre is None:
        return None
    blocks, y, z = pre.launch.grid
    if y != 1 or z != 1 or any(isinstance(b, Expr) for b in pre.launch.block) or pre.launch.shared_bytes:
        raise ValueError(f"{config.name}: a prologue's grid is one-dimensional, its block and shared memory fixed")
    return PrologueFormula(blocks, pre.floats, tuple(int(b) for b in pre.launch.block), pre.does)  # type: ignore[arg-type]
