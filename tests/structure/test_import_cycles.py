"""No import cycles inside ``bureau/`` or ``reporters/``: read from the source, not from
``sys.modules``, so a cycle that happens not to bite at run time is found too.

What counts as an import (docs/architecture.md, "Layers"): every ``import`` and
``from ... import`` statement anywhere in a module — at the top, inside a function, or
under ``if TYPE_CHECKING:``. A cycle hidden in a function-local import is still two
modules that each need the other, and one only for its type hints is still a design
that cannot be read bottom-up. ``from package import name`` is an edge to the
submodule ``package.name`` when there is one, else to the package itself; importing a
submodule is not counted as an edge to its parent package (Python runs the parent's
``__init__`` first, but a package re-exporting its own submodules is not a cycle of
design).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
PACKAGES = ("bureau", "reporters")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            found[module_name(path)] = path
    return found


def _imported(tree: ast.AST, name: str, is_package: bool) -> Iterator[tuple[str, str | None]]:
    """(module, imported name or None) for every import statement in ``tree``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, None
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                here = name.split(".") if is_package else name.split(".")[:-1]
                here = here[:len(here) - (node.level - 1)]
                base = ".".join([*here, base] if base else here)
            for alias in node.names:
                yield base, alias.name


def import_graph() -> dict[str, set[str]]:
    known = modules()
    graph: dict[str, set[str]] = {}
    for name, path in known.items():
        edges: set[str] = set()
        tree = ast.parse(path.read_text(), str(path))
        for module, member in _imported(tree, name, path.name == "__init__.py"):
            target = f"{module}.{member}" if member and f"{module}.{member}" in known \
                else module
            if target in known and target != name:
                edges.add(target)
        graph[name] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_graph_sees_every_kind_of_import() -> None:
    """The reader itself: top-level, function-local, TYPE_CHECKING and relative imports
    are all edges (otherwise the test below could pass by not looking)."""
    source = (
        "from typing import TYPE_CHECKING\n"
        "import bureau.errors\n"
        "from bureau import config\n"
        "if TYPE_CHECKING:\n    from bureau.storage.db import run_tx\n"
        "def f():\n    from . import metrics\n"
    )
    edges = {m if n is None else f"{m}.{n}" for m, n in
             _imported(ast.parse(source), "bureau.cli", is_package=False)}
    assert {"bureau.errors", "bureau.config", "bureau.storage.db.run_tx", "bureau.metrics"} <= edges
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]


def test_no_import_cycles() -> None:
    graph = import_graph()
    assert "bureau.errors" in graph and "reporters.wire" in graph
    found = cycles(graph)
    assert found == [], "import cycles: " + "; ".join(" <-> ".join(c) for c in found)
