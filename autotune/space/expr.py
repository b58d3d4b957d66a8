"""Integer expressions over the problem shape, so that a launch-grid formula is written once, in
Python, and also emitted as C and as Python text (the exported header and launcher).

Why evaluate the families' own geometry with symbolic M and N rather than declare the grid as
expressions and derive the Python from them: the families stay plain Python (`ceil_div(M, BM)`,
`min`, `if`), readable and fast in the search's hot paths, and nothing is written twice. An
`Expr` records the arithmetic done on it; `ceil_div` dispatches on it. Where the Python branches
on the shape (`if tiles <= MAX_TILES`, or builtin `min`/`max`, which compare), `explore` runs the
function once per combination of the branches' outcomes and the results are joined into a
conditional expression (`c ? a : b`). A function that branches too often (a loop over the shape's
values), converts the shape to a Python int, or negates it raises NotDerivable: the exported
launchers then fall back to the exported shape alone and say so.

The expressions hold non-negative values only (shape sizes, tile counts), so C's truncating `/`
and `%` agree with Python's `//` and `%`; the C side computes in `long long`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Union

Operand = Union["Expr", int, bool]
MAX_PATHS = 64  # combinations of branch outcomes explored before giving up
ARITHMETIC = {"+": "+", "-": "-", "*": "*", "//": "/", "%": "%"}  # Python -> C operator
COMPARE = ("<", "<=", ">", ">=", "==", "!=")
LOGIC = {"and": "&&", "or": "||"}


class NotDerivable(Exception):
    """The function cannot be turned into one expression of the shape."""


class _Trace:
    """The outcomes chosen for the branches one run of a function meets, in order."""

    def __init__(self, plan: list[bool]):
        self.plan = plan
        self.taken: list[tuple[Expr, bool]] = []

    def decide(self, cond: Expr) -> bool:
        i = len(self.taken)
        value = self.plan[i] if i < len(self.plan) else True
        self.taken.append((cond, value))
        return value


_active: list[_Trace] = []  # the trace of the run in progress (explore), if any


class Expr:
    """A node: ("var", name), ("const", value), (op, left, right), ("not", x), ("select", c, a, b),
    ("ceil_div", a, b), ("call", helper, x)."""

    __slots__ = ("op", "args")

    def __init__(self, op: str, *args: Any):
        self.op = op
        self.args = args

    # arithmetic
    def __add__(self, o: Operand) -> Expr | int:
        return binary("+", self, o)

    def __radd__(self, o: Operand) -> Expr | int:
        return binary("+", o, self)

    def __sub__(self, o: Operand) -> Expr | int:
        return binary("-", self, o)

    def __rsub__(self, o: Operand) -> Expr | int:
        return binary("-", o, self)

    def __mul__(self, o: Operand) -> Expr | int:
        return binary("*", self, o)

    def __rmul__(self, o: Operand) -> Expr | int:
        return binary("*", o, self)

    def __floordiv__(self, o: Operand) -> Expr | int:
        return binary("//", self, o)

    def __rfloordiv__(self, o: Operand) -> Expr | int:
        return binary("//", o, self)

    def __mod__(self, o: Operand) -> Expr | int:
        return binary("%", self, o)

    def __rmod__(self, o: Operand) -> Expr | int:
        return binary("%", o, self)

    def __neg__(self) -> Expr:
        raise NotDerivable("negates a shape value (C and Python round negative quotients differently)")

    # comparisons give conditions; a condition decides a branch only while `explore` runs
    def __lt__(self, o: Operand) -> Expr | bool:  # type: ignore[override]
        return binary("<", self, o)

    def __le__(self, o: Operand) -> Expr | bool:
        return binary("<=", self, o)

    def __gt__(self, o: Operand) -> Expr | bool:
        return binary(">", self, o)

    def __ge__(self, o: Operand) -> Expr | bool:
        return binary(">=", self, o)

    def __eq__(self, o: object) -> Expr | bool:  # type: ignore[override]
        return binary("==", self, o)  # type: ignore[arg-type]

    def __ne__(self, o: object) -> Expr | bool:  # type: ignore[override]
        return binary("!=", self, o)  # type: ignore[arg-type]

    __hash__ = object.__hash__

    def __bool__(self) -> bool:
        if not _active:
            raise NotDerivable(f"branches on {self.python()} outside explore()")
        return _active[-1].decide(self)

    def __index__(self) -> int:
        raise NotDerivable(f"uses {self.python()} as a Python int (a loop or an index over the shape)")

    __int__ = __index__

    def __str__(self) -> str:
        return self.python()

    def __format__(self, spec: str) -> str:
        return self.python()

    def c(self) -> str:
        return emit(self, "c", top=True)

    def python(self) -> str:
        return emit(self, "python", top=True)


@dataclass(frozen=True)
class Helper:
    """A function of one shape value that the emitted C and Python define before the formula calls
    it: for a rule with a loop over candidates (tailsplit's pieces), which no expression holds.
    `fn` is the same rule on numbers (tests hold the texts to it)."""

    name: str
    c: str  # a C definition of `long long name(long long x)`, include-guarded
    python: str  # a Python definition of `name(x)`
    fn: Callable[[int], int]


def call(helper: Helper, x: Operand) -> Any:
    """helper(x): a number for a number, else an expression that calls it."""
    x = _value(x)
    return Expr("call", helper, x) if isinstance(x, Expr) else helper.fn(int(x))


def helpers(*xs: Operand) -> list[Helper]:
    """The helpers the expressions call, each once, in the order met."""
    found: dict[str, Helper] = {}

    def walk(x: Any) -> None:
        if isinstance(x, Expr):
            if x.op == "call":
                found.setdefault(x.args[0].name, x.args[0])
            for a in x.args:
                walk(a)

    for x in xs:
        walk(x)
    return list(found.values())


def variables(*xs: Operand) -> set[str]:
    """The names the expressions read (var nodes), so that a launcher defines only those it needs."""
    return {str(x.args[0]) for x in _nodes(xs) if x.op == "var"}


def _nodes(xs: tuple[Any, ...]) -> list[Expr]:
    out: list[Expr] = []
    stack = [x for x in xs if isinstance(x, Expr)]
    while stack:
        x = stack.pop()
        out.append(x)
        stack += [a for a in x.args if isinstance(a, Expr)]
    return out


def var(name: str) -> Expr:
    return Expr("var", name)


def is_expr(x: object) -> bool:
    return isinstance(x, Expr)


def _value(x: Operand) -> Expr | int | bool:
    if isinstance(x, Expr) and x.op == "const":
        return x.args[0]  # type: ignore[no-any-return]
    if isinstance(x, (Expr, int, bool)):
        return x
    return int(x)  # numpy integers


_FOLD: dict[str, Callable[[Any, Any], Any]] = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b, "//": lambda a, b: a // b,
    "%": lambda a, b: a % b, "<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b, "==": lambda a, b: a == b, "!=": lambda a, b: a != b,
    "ceil_div": lambda a, b: -(-a // b),
}


def binary(op: str, a: Operand, b: Operand) -> Any:
    """a op b, folded where both are numbers and where one side is the identity."""
    a, b = _value(a), _value(b)
    if not isinstance(a, Expr) and not isinstance(b, Expr):
        return _FOLD[op](a, b)
    if not isinstance(b, Expr) and ((op in ("*", "//", "ceil_div") and b == 1) or (op in ("+", "-") and b == 0)):
        return a
    if not isinstance(a, Expr) and ((op == "*" and a == 1) or (op == "+" and a == 0)):
        return b
    return Expr(op, a, b)


def ceil_div(a: Any, b: Any) -> Any:
    """The number of b-sized pieces that cover a; an expression when either is one."""
    if isinstance(a, Expr) or isinstance(b, Expr):
        return binary("ceil_div", a, b)
    return -(-a // b)


def round_up(a: Any, b: Any) -> Any:
    """a rounded up to a multiple of b (whole tiles); an expression when either is one."""
    return ceil_div(a, b) * b


def logic(op: str, a: Operand, b: Operand) -> Any:
    """a and/or b as a condition, folded where one side is a Python bool."""
    a, b = _value(a), _value(b)
    for x, y in ((a, b), (b, a)):
        if not isinstance(x, Expr):
            if op == "and":
                return y if x else False
            return True if x else y
    return Expr(op, a, b)


def negate(a: Operand) -> Any:
    a = _value(a)
    return (not a) if not isinstance(a, Expr) else Expr("not", a)


def select(cond: Operand, a: Operand, b: Operand) -> Any:
    """cond ? a : b; just one side when the condition is known or both sides read the same."""
    cond, a, b = _value(cond), _value(a), _value(b)
    if not isinstance(cond, Expr):
        return a if cond else b
    if text(a) == text(b):
        return a
    return Expr("select", cond, a, b)


def text(x: Operand) -> str:
    return emit(x, "python", top=True)


def emit(x: Operand, lang: str, top: bool = False) -> str:
    """C or Python source of an expression; every compound part but the outermost in parentheses."""
    if isinstance(x, bool):
        return ("true" if x else "false") if lang == "c" else str(x)
    if not isinstance(x, Expr):
        return str(int(x))
    if x.op == "var":
        return str(x.args[0])
    if x.op == "const":
        return str(x.args[0])
    if x.op == "call":
        return f"{x.args[0].name}({emit(x.args[1], lang, top=True)})"
    args = [emit(a, lang) for a in x.args]
    if x.op == "ceil_div":
        a, b = args
        divisor = x.args[1]
        above = f"{a} + {divisor - 1}" if isinstance(divisor, int) else f"{a} + {b} - 1"
        out = f"({above}) {'/' if lang == 'c' else '//'} {b}"
    elif x.op in ARITHMETIC or x.op in COMPARE:
        sym = ARITHMETIC.get(x.op, x.op) if lang == "c" else x.op
        out = f"{args[0]} {sym} {args[1]}"
    elif x.op in LOGIC:
        out = f"{args[0]} {LOGIC[x.op] if lang == 'c' else x.op} {args[1]}"
    elif x.op == "not":
        out = f"!{args[0]}" if lang == "c" else f"not {args[0]}"
    elif x.op == "select":
        c, a, b = args
        out = f"{c} ? {a} : {b}" if lang == "c" else f"{a} if {c} else {b}"
    else:
        raise ValueError(f"unknown expression node {x.op!r}")
    return out if top else f"({out})"


def explore(fn: Callable[[], Any]) -> list[tuple[Any, Any]]:
    """Run fn once per combination of outcomes of the shape conditions it branches on: a list of
    (condition under which that run's path is taken, what it returned). The conditions of the
    list are exclusive and together always hold. More than MAX_PATHS paths: NotDerivable."""
    paths: list[tuple[Any, Any]] = []
    plan: list[bool] = []
    while True:
        trace = _Trace(plan)
        _active.append(trace)
        try:
            result = fn()
        except ZeroDivisionError:
            raise NotDerivable("divides by zero on some path") from None
        finally:
            _active.pop()
        cond: Any = True
        for c, outcome in trace.taken:
            cond = logic("and", cond, c if outcome else negate(c))
        paths.append((cond, result))
        if len(paths) > MAX_PATHS:
            raise NotDerivable(f"branches on the shape in more than {MAX_PATHS} ways")
        outcomes = [v for _, v in trace.taken]
        while outcomes and not outcomes[-1]:
            outcomes.pop()
        if not outcomes:
            return paths
        plan = outcomes[:-1] + [False]


def join(paths: list[tuple[Any, Any]], pick: Callable[[Any], Any]) -> Any:
    """One expression of pick(result) over all paths: nested selects, the last path the default."""
    out = pick(paths[-1][1])
    for cond, result in reversed(paths[:-1]):
        out = select(cond, pick(result), out)
    return out


def any_of(paths: list[tuple[Any, Any]], holds: Callable[[Any], bool]) -> Any:
    """The condition under which the path taken is one whose result satisfies `holds`."""
    out: Any = False
    for cond, result in paths:
        if holds(result):
            out = logic("or", out, cond)
    return out
