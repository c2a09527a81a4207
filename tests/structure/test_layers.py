"""The layers of docs/architecture.md ("Layers"), enforced: every module of ``bureau/``
and ``reporters/`` sits in exactly one declared layer, and imports only from its own
layer or a lower one. ``tests/structure/test_import_cycles.py`` finds cycles; this
finds an import that points upwards even when nothing points back.

And the storage seam (issue 21 point 1): no module outside ``bureau/storage/`` imports
asyncpg (nor for a type hint) or holds a SQL string.

Imports are read from the source exactly as the cycle test reads them (top level,
function-local, ``TYPE_CHECKING``, relative).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from tests.structure.test_import_cycles import _imported, modules

#: Bottom to top: (layer, its members). A member is a module's dotted name, or
#: ``package.*`` for every module under that package (the package's ``__init__`` too).
#: A module belongs to the layer of its most specific member: ``bureau.http.app`` to
#: the composition root, though ``bureau.http.*`` also names it. Keep this list and
#: the "Layers" section of docs/architecture.md the same.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("reporters", ("reporters.*",)),
    ("scoring", ("bureau.scoring.*",)),
    ("foundations", (
        "bureau", "bureau.errors", "bureau.config", "bureau.metrics", "bureau.ports",
        "bureau.keyfiles", "bureau.report_text", "bureau.remote",
    )),
    ("storage", ("bureau.storage.*",)),
    ("keys and leadership", ("bureau.ledger_keys", "bureau.background")),
    ("transparency", ("bureau.transparency.*",)),
    ("kinds", ("bureau.records", "bureau.kinds")),
    ("intake", ("bureau.intake.*",)),
    ("evidence", ("bureau.evidence.*",)),
    ("reads", ("bureau.reads.*", "bureau.interop.*", "bureau.replica")),
    ("settlement", ("bureau.settlement.*",)),
    ("views", ("bureau.views.*",)),
    ("http", ("bureau.http.*", "bureau.mirror.*")),
    ("composition root", ("bureau.http.app",)),
    ("commands", (
        "bureau.cli.*", "bureau.admin_cli", "bureau.status", "bureau.verify",
        "bureau.ledger_line", "bureau.interop.cli", "bureau.mirror.cli", "bureau.simulate.*",
    )),
)

#: Arrows forbidden between packages of one layer, which the order of LAYERS cannot
#: see: (importer, imported, why), each a package (its modules) or a module. Keep them
#: and docs/architecture.md ("Layers") the same.
FORBIDDEN: tuple[tuple[str, str, str], ...] = (
    ("reporters.otlp", "reporters.proxy",
     "the OTLP receiver stands on the daemon kit (reporters.daemon), not on the proxy"),
    ("reporters.prober", "reporters.proxy",
     "the prober stands on the daemon kit (reporters.daemon), not on the proxy"),
    ("reporters.daemon", "reporters.proxy", "the daemon kit imports no daemon"),
    ("reporters.daemon", "reporters.otlp", "the daemon kit imports no daemon"),
    ("reporters.daemon", "reporters.prober", "the daemon kit imports no daemon"),
)

STORAGE = "bureau.storage"

#: what a SQL statement looks like in a string constant
SQL = re.compile(
    r"\b(?:SELECT\s+(?:\w+\b|[*$(])|(?:WITH\s+\w+\s+AS\s*\(|INSERT\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|"
    r"CREATE\s+(?:TABLE|INDEX|UNIQUE|SCHEMA|EXTENSION|FUNCTION|OR|ROLE|DATABASE|"
    r"SEQUENCE|TYPE|VIEW|TRIGGER)|ALTER\s+(?:TABLE|ROLE|DATABASE|SYSTEM|SEQUENCE|INDEX)|"
    r"COPY\s+\w+|TRUNCATE\s+\w+|DROP\s+(?:TABLE|INDEX|SCHEMA|DATABASE|ROLE)|"
    r"pg_\w*advisory_\w+|LOCK\s+TABLE|SET\s+LOCAL|FOR\s+UPDATE|ON\s+CONFLICT)\b)",
    re.DOTALL,
)


def _matches(member: str, module: str) -> int:
    """How specific ``member`` is for ``module``: 0 when it does not name it."""
    if member.endswith(".*"):
        package = member[:-2]
        if module == package or module.startswith(package + "."):
            return len(package)
        return 0
    return len(member) + 1 if module == member else 0


def layer_of(module: str, layers: tuple[tuple[str, tuple[str, ...]], ...] = LAYERS) \
        -> tuple[int, str]:
    """(index, name) of the layer ``module`` belongs to; raises when no member, or two
    equally specific members in different layers, name it."""
    best: list[tuple[int, int, str]] = []
    for index, (name, members) in enumerate(layers):
        score = max((_matches(m, module) for m in members), default=0)
        if score:
            best.append((score, index, name))
    if not best:
        raise LookupError(
            f"{module} is in no layer: add it to LAYERS in tests/structure/test_layers.py "
            "(and to the \"Layers\" section of docs/architecture.md), in the lowest layer "
            "that holds everything it imports")
    best.sort(reverse=True)
    if len(best) > 1 and best[0][0] == best[1][0]:
        raise LookupError(f"{module} is in two layers: {best[0][2]!r} and {best[1][2]!r}")
    return best[0][1], best[0][2]


def _edges(name: str, path: Path, known: set[str]) -> Iterator[tuple[str, int]]:
    """(imported module, line) for every import of a known module by ``name``."""
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if not isinstance(node, ast.Import | ast.ImportFrom):
            continue
        single = ast.Module(body=[node], type_ignores=[])
        for module, member in _imported(single, name, path.name == "__init__.py"):
            target = f"{module}.{member}" if member and f"{module}.{member}" in known \
                else module
            if target in known and target != name:
                yield target, node.lineno


def upward_imports(sources: dict[str, Path],
                   layers: tuple[tuple[str, tuple[str, ...]], ...] = LAYERS) -> list[str]:
    known = set(sources)
    found = []
    for name, path in sorted(sources.items()):
        mine, my_layer = layer_of(name, layers)
        for target, line in sorted(set(_edges(name, path, known))):
            theirs, their_layer = layer_of(target, layers)
            if theirs > mine:
                found.append(f"{name}:{line}: {name} ({my_layer}) imports {target} "
                             f"({their_layer})")
    return found


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def forbidden_imports(sources: dict[str, Path],
                      rules: tuple[tuple[str, str, str], ...] = FORBIDDEN) -> list[str]:
    known = set(sources)
    found = []
    for name, path in sorted(sources.items()):
        for target, line in sorted(set(_edges(name, path, known))):
            for importer, imported, why in rules:
                if _within(name, importer) and _within(target, imported):
                    found.append(f"{name}:{line}: {name} imports {target}: {why}")
    return found


def _in_storage(name: str) -> bool:
    return name == STORAGE or name.startswith(STORAGE + ".")


def asyncpg_imports(sources: dict[str, Path]) -> list[str]:
    found: list[tuple[str, int]] = []
    for name, path in sorted(sources.items()):
        if _in_storage(name):
            continue
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            else:
                continue
            if any(n == "asyncpg" or n.startswith("asyncpg.") for n in names):
                found.append((name, node.lineno))
    return [f"{name}:{line}" for name, line in sorted(found)]


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the string constants that are docstrings (or bare string statements,
    which document the assignment above them)."""
    ids = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not isinstance(body, list):
            continue
        for statement in body:
            if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant) \
                    and isinstance(statement.value.value, str):
                ids.add(id(statement.value))
    return ids


def sql_strings(source: str) -> list[tuple[int, str]]:
    """(line, text) of every string constant in ``source`` that reads as SQL; an
    f-string's pieces are joined first, so a statement split around ``{...}`` is seen."""
    tree = ast.parse(source)
    skip = _docstrings(tree)
    found = []
    inside_fstrings: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            text = "".join(v.value if isinstance(v, ast.Constant) else "_"
                           for v in node.values)
            inside_fstrings.update(id(v) for v in node.values)
            if SQL.search(text):
                found.append((node.lineno, text))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and id(node) not in skip and id(node) not in inside_fstrings \
                and SQL.search(node.value):
            found.append((node.lineno, node.value))
    return sorted(found)


def sql_outside_storage(sources: dict[str, Path]) -> list[str]:
    """SQL in the service outside its storage (``reporters/`` is the client side: its
    spool is SQLite, its own business)."""
    found = []
    for name, path in sorted(sources.items()):
        if _in_storage(name) or not name.startswith("bureau"):
            continue
        for line, text in sql_strings(path.read_text()):
            found.append(f"{name}:{line}: {' '.join(text.split())[:80]!r}")
    return found


def _planted(root: Path, files: dict[str, str]) -> dict[str, Path]:
    """Modules (dotted name -> source) written under ``root``: name -> path."""
    sources = {}
    for name, text in files.items():
        path = root / (name.replace(".", "/") + ".py")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        sources[name] = path
    return sources


def test_the_checker_catches_what_it_is_for(tmp_path: Path) -> None:
    """Planted violations are found (otherwise the tests below could pass by not
    looking): an upward import hidden in a function and under TYPE_CHECKING, an
    unassigned module, asyncpg for a type hint, SQL in a plain string and split across
    an f-string, and none of it in storage or in a docstring."""
    layers = (("low", ("pkg.low", "pkg.store.*")), ("high", ("pkg.*",)), ("top", ("pkg.top",)))
    files = {
        "pkg.low": "def f():\n    from pkg import high\n",
        "pkg.high": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pkg.top\n"
                    "import pkg.low\n",
        "pkg.top": "from . import high, low\n",
        "pkg.store.rows": "import asyncpg\nQ = 'SELECT seq FROM entries'\n",
    }
    sources = _planted(tmp_path, files)
    assert layer_of("pkg.top", layers) == (2, "top")
    assert layer_of("pkg.store.rows", layers) == (0, "low")
    assert layer_of("pkg.other", layers) == (1, "high")
    found = upward_imports(sources, layers)
    assert [f.split(": ", 1)[1] for f in found] == [
        "pkg.high (high) imports pkg.top (top)",
        "pkg.low (low) imports pkg.high (high)",
    ], found
    try:
        layer_of("elsewhere.mod", layers)
    except LookupError as e:
        assert "add it to LAYERS" in str(e)
    else:
        raise AssertionError("an unassigned module was given a layer")
    try:
        layer_of("pkg.x", (("a", ("pkg.*",)), ("b", ("pkg.*",))))
    except LookupError as e:
        assert "two layers" in str(e)
    else:
        raise AssertionError("a module in two layers was given one")

    planted = tmp_path / "planted.py"
    planted.write_text(
        '"""SELECT a FROM b, in a docstring: not SQL."""\n'
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from asyncpg import Connection\n"
        "import asyncpg.pool\n"
        "def f(t):\n    '''DELETE FROM docs'''\n"
        "    a = \"INSERT INTO nonces (n) VALUES ($1)\"\n"
        "    b = f\"UPDATE {t} SET x = 1\"\n"
        "    c = 'Select your key'\n"
        "    return conn.execute(\"SELECT pg_advisory_lock($1)\")\n"
    )
    hits = {"bureau.planted": planted, "bureau.storage.ok": sources["pkg.store.rows"]}
    assert asyncpg_imports(hits) == ["bureau.planted:4", "bureau.planted:5"]
    assert [line for line, _ in sql_strings(planted.read_text())] == [8, 9, 11]
    assert len(sql_outside_storage(hits)) == 3
    assert sql_outside_storage({"reporters.spool": planted}) == []  # the client's SQLite
    assert asyncpg_imports({"reporters.spool": planted}) == ["reporters.spool:4",
                                                             "reporters.spool:5"]


def test_every_module_is_in_one_layer() -> None:
    sources = modules()
    assert "bureau.errors" in sources and "reporters.wire" in sources
    unplaced = []
    for name in sorted(sources):
        try:
            layer_of(name)
        except LookupError as e:
            unplaced.append(str(e))
    assert unplaced == [], "\n".join(unplaced)


def test_imports_point_downwards() -> None:
    found = upward_imports(modules())
    assert found == [], "imports from a higher layer:\n" + "\n".join(found)


def test_only_storage_imports_asyncpg() -> None:
    found = asyncpg_imports(modules())
    assert found == [], "asyncpg imported outside bureau/storage/: " + ", ".join(found)


def test_only_storage_holds_sql() -> None:
    found = sql_outside_storage(modules())
    assert found == [], "SQL outside bureau/storage/:\n" + "\n".join(found)


def test_the_documented_layers_are_the_declared_ones() -> None:
    """docs/architecture.md's "Layers" lists the same layers, bottom first, by name."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "architecture.md").read_text()
    section = doc.split("\n## Layers\n", 1)[1].split("\n## ", 1)[0]
    documented = re.findall(r"^\d+\. \*\*(.+?)\*\*", section, flags=re.MULTILINE)
    assert documented == [name for name, _ in LAYERS]


def test_forbidden_arrows_are_found(tmp_path: Path) -> None:
    """A planted import of a sibling the rules forbid is found, a function-local one too;
    the same import elsewhere is not."""
    files = {"pkg.daemon.kit": "def f():\n    from pkg.proxy import app\n",
             "pkg.proxy.app": "import pkg.daemon.kit\n",
             "pkg.otlp": "from pkg.proxy.app import x\n"}
    sources = _planted(tmp_path, files)
    rules = (("pkg.daemon", "pkg.proxy", "kit"), ("pkg.otlp", "pkg.proxy", "sibling"))
    assert forbidden_imports(sources, rules) == [
        "pkg.daemon.kit:2: pkg.daemon.kit imports pkg.proxy.app: kit",
        "pkg.otlp:1: pkg.otlp imports pkg.proxy.app: sibling"]


def test_no_forbidden_arrows() -> None:
    """The OTLP receiver and the prober stand on the daemon kit, never on the proxy
    (issue 33: both imported the proxy's configuration and ops code)."""
    sources = modules()
    assert {"reporters.daemon.ops", "reporters.otlp.receiver", "reporters.prober.runner"} \
        <= set(sources)
    found = forbidden_imports(sources)
    assert found == [], "forbidden imports:\n" + "\n".join(found)
