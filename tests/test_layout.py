"""The package's shape: the folders follow the flow, each layer imports only the layers below
it (so there is no import cycle, also none hidden in a function), and no module is long."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "autotune"
# Lowest first. A module may import its own layer's modules and any lower layer's. packed: reading a gzip'd
# database, which backends (replay), store and explain all do.
LAYERS = ["errors", "packed", "space", "families", "codegen", "backends", "store", "explain", "search", "api", "torch", "cli"]
MAX_LINES = 400


def modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def imports(name: str, path: Path) -> set[str]:
    """The autotune modules a module imports, at the top or inside functions alike."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            found |= {f"{base}.{a.name}" for a in node.names} | {base}
    known = modules()
    return {m for m in found if m in known and m != name}


def layer(name: str) -> int:
    parts = name.split(".")
    if parts[1:] == ["__main__"]:  # `python -m autotune`: the command line's entry, at its layer
        return LAYERS.index("cli")
    return LAYERS.index(parts[1]) if len(parts) > 1 else -1  # autotune/__init__: the version only


def test_layers_import_only_downwards():
    wrong = []
    for name, path in modules().items():
        for target in imports(name, path):
            if layer(target) > layer(name):
                wrong.append(f"{name} imports {target}")
    assert not wrong, "\n".join(sorted(wrong))


def test_no_import_cycles():
    graph = {name: imports(name, path) for name, path in modules().items()}
    state: dict[str, int] = {}

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in graph[node]:
            if state.get(nxt) == 1:
                pytest.fail("import cycle: " + " -> ".join(trail[trail.index(nxt):] + [node, nxt]))
            if nxt not in state:
                visit(nxt, trail + [node])
        state[node] = 2

    for node in graph:
        if node not in state:
            visit(node, [])


def test_every_folder_is_a_layer_and_no_module_is_long():
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and not p.name.startswith("__")}
    shadowed = sorted(f for f in folders if (PACKAGE / f"{f}.py").exists())
    assert not shadowed, f"a module beside its package of the same name: {shadowed}"
    assert folders <= set(LAYERS), folders - set(LAYERS)
    long = {n: len(p.read_text().splitlines()) for n, p in modules().items()}
    assert {n: k for n, k in long.items() if k > MAX_LINES} == {}
