"""The search space: parameters, allowed values and constraints, declared once.

A family (naive, tiled, ...) lists its parameters and constraints; every constraint
carries the reason shown to the user and stored in the database when a config is
refused. Only configs built here (validated ints and enum strings) reach a template.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping, Protocol, Union

from autotune.errors import SpaceError

Value = Union[int, str]
Params = dict[str, Any]  # values are ints or enum strings, checked by Param.parse and the constraints

# int indexing in the kernels: every matrix must hold fewer than 2**31 elements.
MAX_ELEMENTS = 2**31 - 1


@dataclass(frozen=True)
class Limits:
    """What the device allows: read from the GPU (backends.cuda.device) or a named preset
    (space.devices). The defaults are the H200's (space.devices.PRESETS["h200"])."""

    max_threads_per_block: int = 1024
    max_static_shared: int = 48 * 1024  # statically declared __shared__ arrays
    max_shared_optin: int = 227 * 1024  # dynamic shared memory after opting in
    max_grid_y: int = 65535
    max_grid_z: int = 65535
    sms: int = 132  # multiprocessors: a grid of fewer blocks than the SMs hold leaves some idle (Family.fit)
    max_threads_per_sm: int = 2048  # with registers and shared memory, how many blocks an SM holds at once
    max_blocks_per_sm: int = 32
    shared_per_sm: int = 228 * 1024
    reserved_shared_per_block: int = 1024  # the system's share of every resident block's shared memory (sm_80+)
    regs_per_sm: int = 65536
    arch: str = "sm_90"  # what NVRTC compiles for; a family's ArchNeed is checked against it

    @property
    def compute_capability(self) -> int:
        """90 for sm_90 (and sm_90a): what an ArchNeed tests."""
        return int(self.arch.removeprefix("sm_").rstrip("af"))

    def resident(self, threads: int, registers_per_thread: int, shared_bytes: int = 0) -> int:
        """Blocks of this many threads, registers and shared bytes an SM holds at once (at least 1)."""
        by_shared = self.shared_per_sm // shared_bytes if shared_bytes else self.max_blocks_per_sm
        return max(1, min(self.max_threads_per_sm // threads, self.regs_per_sm // (threads * registers_per_thread),
                          by_shared, self.max_blocks_per_sm))


@dataclass(frozen=True)
class ArchNeed:
    """Instructions a family's kernels use that only some architectures have (wgmma: sm_90a alone).
    On another device the family is refused with one line and is absent from its search."""

    what: str  # what the kernels need, for the refusal: "wgmma (sm_90a, Hopper only)"
    ok: Callable[[int], bool]  # whether a compute capability (90 for sm_90) has it


@dataclass(frozen=True)
class Launch:
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_bytes: int = 0  # dynamic shared memory

    @property
    def threads(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]


# The kernel a config's prologue launches: in the same module as the config's own, named after it.
PROLOGUE_SUFFIX = "_pre"


@dataclass(frozen=True)
class Prologue:
    """A launch before the kernel's own, for a config whose product needs one (blocked's PB=1, the
    split of tf32x3wg): the module's kernel `<name>_pre` with the kernel's own arguments, except that
    its C is a workspace of `floats` floats, which the kernel's launch is then passed as its B. Both
    launches, and the workspace, belong to the one config: timed, verified and exported together.
    Its grid is one-dimensional. A family computes `launch` and `floats` with plain arithmetic and
    ceil_div, no branch on the shape, so the exported launchers get both as formulas of M, N and K
    (space.formula.derive_prologue) from this one definition."""

    launch: Launch
    floats: int
    does: str  # what it writes into the workspace, for the manifest and the launchers' comments


@dataclass(frozen=True)
class Param:
    name: str
    values: tuple[Value, ...]
    default: Value | Callable[[Params], Value]
    doc: str
    # For a parameter added after results were recorded: the value those older kernels had, or a
    # function of the parameters before it where that value followed from them (skinny's AH).
    # A recorded row without the column is read as this value (families.config_of_row, used by
    # export, report and replay), so old databases keep their meaning under the new names.
    absent: Value | Callable[[Params], Value] | None = None
    # False: the kernel name leaves the parameter out while it has its `absent` value, so the
    # kernels from before it keep their names, and with them their rendered sources.
    named_at_absent: bool = True

    def absent_at(self, values: Params) -> Value | None:
        """The value kernels from before this parameter had, given the others' values."""
        return self.absent(values) if callable(self.absent) else self.absent

    def parse(self, text: Value) -> Value:
        """Turn a command-line string into an allowed value, or say what is allowed."""
        allowed = ", ".join(str(v) for v in self.values)
        if isinstance(self.values[0], int):
            try:
                value: Value = int(text)
            except (TypeError, ValueError):
                raise SpaceError(f"{self.name}={text!r} is not an integer; allowed: {allowed}") from None
        else:
            value = str(text)
        if value not in self.values:
            raise SpaceError(f"{self.name}={text} is outside the space; allowed: {allowed}")
        return value


@dataclass(frozen=True)
class Constraint:
    """A rule a config must keep. `reads` names every parameter `ok` looks at: the family checks
    the names when it is declared (a misspelt one fails there, not silently at search time),
    the walk decides the rule as soon as those are bound, and `ok` is handed only those values."""

    reason: str
    reads: tuple[str, ...]
    ok: Callable[[Params, Limits], bool]

    def holds(self, values: Params, limits: Limits) -> bool:
        # `ok` gets every value (a copy per check would slow the walk of large spaces); that it
        # reads only `reads` is checked for every family by tests/test_space.py
        return self.ok(values, limits)


@dataclass(frozen=True)
class HipSupport:
    """What a family says about exporting its kernels as HIP (codegen.hip): a family without one is
    refused there in one line, so a new family is never exported untried."""

    # Why its kernels need 32-lane waves (their source then stops a wave64 compile); None: any width.
    wave32: str | None
    # The -p values that keep its kernels off cp.async, and what then does their copies.
    no_cp_async: str = "ASYNC=0 (its stages are filled through registers)"


class Fit(Protocol):
    """A family's default fitted to a shape (Family.fit): the values to change. `keep`: the names the caller
    fixed (measure -p BN=128); the fit changes none of them and derives the rest from their values."""

    def __call__(self, p: Params, shape: tuple[int, int, int], limits: Limits,
                 keep: frozenset[str] = frozenset()) -> Params: ...


def _no_derived(p: Params) -> dict[str, int]:
    return {}


def _no_shape_rules(p: Params, M: int, N: int) -> list[str]:
    return []


def _no_prologue(p: Params, M: int, N: int, K: int) -> Prologue | None:
    return None


@dataclass(frozen=True)
class Family:
    name: str
    doc: str
    params: tuple[Param, ...]
    constraints: tuple[Constraint, ...]
    template: str
    geometry: Callable[[Params, int, int], Launch]
    tags: dict[str, str] = field(default_factory=dict)  # short name-part for a param
    # Quantities that follow from the parameters (threads, sub-tiles, shared bytes), computed
    # once here and handed to the template, the launch geometry and the model alike.
    derive: Callable[[Params], dict[str, int]] = _no_derived
    # Reasons a config cannot run at a problem shape beyond the grid limits (e.g. more output
    # tiles than a split-K kernel has turnstiles); empty when it can.
    shape_rules: Callable[[Params, int, int], list[str]] = _no_shape_rules
    # The default's values that depend on the problem (split-K's splits fill the SMs): a search
    # measures the default with them before the default itself. None: nothing depends on it.
    fit: Fit | None = None
    # The launch that must run before the kernel's own at a shape (Prologue); None: the kernel runs alone.
    prologue: Callable[[Params, int, int, int], Prologue | None] = _no_prologue
    # True: `geometry` takes the device's Limits as a fourth argument, with Limits() as its default (a
    # persistent grid of blocks per SM: streamk); Config.geometry passes a backend's limits where it has them.
    geometry_reads_limits: bool = False
    # The values of parameters whose good values follow from the device (on_device); None: none do.
    device_values: Callable[[Limits], dict[str, tuple[Value, ...]]] | None = None
    # The values of parameters that make no other kernel run at a shape (M, N, K), cut to one (at_shape): blocked's
    # CS where N % 4 == 0. None: every value may matter at every shape.
    shape_values: Callable[[tuple[int, int, int]], dict[str, tuple[Value, ...]]] | None = None
    # The architecture its kernels need, where they use instructions others lack; None: any sm_80+.
    needs: ArchNeed | None = None
    # The accuracy contract its kernels are verified under (families.PRECISIONS, backends.reference):
    # "fp32-tc" for products on tensor cores from TF32 parts, searched only when the user asks for it.
    precision: str = "fp32"
    # Its HIP export (codegen.hip); None: refused in one line.
    hip: HipSupport | None = None
    # FLOP per DRAM byte if every operand load went to DRAM once per tile: the ceiling model's global
    # ceiling (explain.model.intensity). None: no traffic model, refused in one line there.
    intensity: Callable[[Params], float] | None = None
    # Which of explain.banks' bank-conflict models counts its hot loop's shared loads (BANK_MODELS):
    # "warp-tiles" (blocked's tiles of warp tiles), "tiles" (tiled's T x T tiles); None: each load
    # counted conflict-free, one pass (a lower bound).
    bank_model: str | None = None
    # False: a suite leaves it out unless --family names it (naive: it never wins, and a trial of it
    # takes seconds at the large shapes).
    in_suites: bool = True
    # (rows, columns) of C one block computes: the tiles, their edge padding and the operand reuse the time
    # model reads (explain.timemodel). None: no tile to tell, refused in one line there.
    block_tile: Callable[[Params], tuple[int, int]] | None = None
    # The static shared memory a block declares, which Launch.shared_bytes (the dynamic part) leaves out.
    static_shared: Callable[[Params], int] | None = None

    def __post_init__(self) -> None:
        names = {p.name for p in self.params}
        for c in self.constraints:
            unknown = sorted(set(c.reads) - names)
            if unknown or not c.reads:
                raise ValueError(f"family {self.name}: constraint {c.reason!r} reads {unknown or 'nothing'}; "
                                 f"its parameters are {sorted(names)}")

    def allows(self, values: Params, limits: Limits) -> bool:
        """Whether values keep every constraint: a fit checks a candidate this way before taking it."""
        return all(c.holds(values, limits) for c in self.constraints)

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        known = ", ".join(p.name for p in self.params)
        raise SpaceError(f"family {self.name} has no parameter {name!r}; its parameters: {known}")


@dataclass(frozen=True)
class Config:
    family: Family
    params: tuple[tuple[str, Value], ...]  # in the family's declaration order

    @property
    def values(self) -> Params:
        return dict(self.params)

    @property
    def derived(self) -> dict[str, int]:
        """What follows from the values (threads, sub-tiles, shared bytes): Family.derive."""
        return self.family.derive(self.values)

    @property
    def name(self) -> str:
        """The kernel's identity: derived from the family and its parameters."""
        parts = [f"{self.family.tags.get(k, k)}{v}" for k, v in self.params if self._named(k, v)]
        return "sgemm_" + self.family.name + "_" + "_".join(parts)

    def _named(self, key: str, value: Value) -> bool:
        p = self.family.param(key)
        return p.named_at_absent or value != p.absent_at(self.values)

    def geometry(self, M: int, N: int, limits: Limits | None = None) -> Launch:
        """The launch at M x N; on the device of `limits` where the family's grid depends on it
        (Family.geometry_reads_limits), else the default device's (Limits())."""
        if limits is not None and self.family.geometry_reads_limits:
            return self.family.geometry(self.values, M, N, limits)  # type: ignore[call-arg]
        return self.family.geometry(self.values, M, N)

    def prologue(self, M: int, N: int, K: int) -> Prologue | None:
        """The launch that runs before this kernel's own at the shape, into a workspace; None: none."""
        return self.family.prologue(self.values, M, N, K)

    @property
    def has_prologue(self) -> bool:
        return self.prologue(1, 1, 1) is not None

    def __str__(self) -> str:
        return f"{self.family.name} " + " ".join(f"{k}={v}" for k, v in self.params)


def make_config(family: Family, given: Mapping[str, Value]) -> Config:
    """Build a config from (possibly string) values; a left-out parameter takes its only value where
    the (narrowed) family allows one (a layout's TA and TB), else its default, which may depend on
    those values (blocked's RT): the default of an NT search is NT's default kernel."""
    for name in given:
        family.param(name)  # unknown names fail here with the list of known ones
    values: Params = {}
    for p in family.params:
        if p.name in given:
            values[p.name] = p.parse(given[p.name])
        elif len(p.values) == 1:
            values[p.name] = p.values[0]
    for p in family.params:
        if p.name not in values:
            values[p.name] = p.default(values) if callable(p.default) else p.default
    return Config(family, tuple((p.name, values[p.name]) for p in family.params))


def narrow(family: Family, choices: dict[str, list[str]]) -> Family:
    """The family with some parameters restricted to the given values (a sub-space to search or
    measure: `-p BM=128,256`). Names, constraints and the template stay the same, so a config of
    the narrowed family is the very config of the whole one."""
    if not choices:
        return family
    allowed = {name: tuple(dict.fromkeys(family.param(name).parse(v) for v in values))
               for name, values in choices.items()}
    params = tuple(replace(p, values=allowed.get(p.name, p.values)) for p in family.params)
    return replace(family, params=params)


def on_device(family: Family, limits: Limits) -> Family:
    """The family a search on the device of `limits` walks: each parameter whose good values follow from
    the device (Family.device_values: tailsplit's WAVE, multiples of its SMs; splitk's fills) cut to those, so that the
    search proposes no other. Values given with -p outside them, or a device none of whose values the
    family lists, keep the values as they were. Configs stay the whole family's."""
    return _cut_to(family, family.device_values(limits) if family.device_values else {})


def at_shape(family: Family, shape: tuple[int, int, int]) -> Family:
    """The family a search at the shape walks: each parameter whose values make no other kernel run there
    (Family.shape_values) cut to the one given, so that the search spends no trial on a twin. Values given
    with -p outside it keep the values as they were. Configs stay the whole family's."""
    return _cut_to(family, family.shape_values(shape) if family.shape_values else {})


def _cut_to(family: Family, wanted: dict[str, tuple[Value, ...]]) -> Family:
    """Each parameter named in `wanted` cut to those of its values; one with none of them keeps its own."""
    if not wanted:
        return family

    def kept(p: Param) -> tuple[Value, ...]:
        return tuple(v for v in p.values if v in wanted.get(p.name, p.values)) or p.values

    return replace(family, params=tuple(replace(p, values=kept(p)) for p in family.params))


def within(family: Family, values: Params) -> bool:
    """Whether every parameter value lies in the family's (possibly narrowed) values."""
    return all(values.get(p.name) in p.values for p in family.params)


def expand(family: Family, choices: dict[str, list[str]]) -> list[Config]:
    """Every combination of the given values, the other parameters at their defaults."""
    names = list(choices)
    lists = [choices[n] for n in names]
    return [make_config(family, dict(zip(names, combo))) for combo in itertools.product(*lists)]


def arch_refusal(family: Family, limits: Limits) -> str | None:
    """Why the family cannot run on the device of `limits` (its ArchNeed), or None where it can."""
    need = family.needs
    if need is None or need.ok(limits.compute_capability):
        return None
    return f"family {family.name} needs {need.what}; the device is {limits.arch}"


def violations(config: Config, limits: Limits = Limits()) -> list[str]:
    """The reasons this config is refused (empty if it is valid), shape aside."""
    refused = arch_refusal(config.family, limits)
    if refused:
        return [refused]
    v = config.values
    return [c.reason for c in config.family.constraints if not c.holds(v, limits)]


def shape_violations(config: Config, M: int, N: int, limits: Limits = Limits()) -> list[str]:
    """Reasons tied to the problem shape: grid dimensions the hardware cannot launch."""
    launch = config.geometry(M, N, limits)
    out = []
    if launch.grid[1] > limits.max_grid_y:
        out.append(f"grid.y = {launch.grid[1]} exceeds the device limit {limits.max_grid_y}")
    if launch.grid[2] > limits.max_grid_z:
        out.append(f"grid.z = {launch.grid[2]} exceeds the device limit {limits.max_grid_z}")
    return out + config.family.shape_rules(config.values, M, N)


def check_shape(M: int, N: int, K: int) -> None:
    """Refuse shapes the kernels cannot handle, with a one-line reason."""
    for label, value in (("M", M), ("N", N), ("K", K)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise SpaceError(f"{label}={value!r} must be a whole number of rows/columns")
        if value < 1:
            raise SpaceError(f"{label}={value} must be at least 1")
    for label, elements in (("A (M*K)", M * K), ("B (K*N)", K * N), ("C (M*N)", M * N)):
        if elements > MAX_ELEMENTS:
            raise SpaceError(
                f"{label} has {elements} elements; kernels index with int, so each matrix "
                f"must hold fewer than 2**31: use a smaller shape"
            )
