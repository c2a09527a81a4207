"""No test imports the simulation package (issue 21): what tests share is written once in
tests/support.py, and the simulation is the thing tests/simulate/ tests, not a toolbox.

Read from the source, as tests/structure/test_import_cycles.py reads it: every
``import`` and ``from ... import`` anywhere in a module (at the top, inside a function,
under ``if TYPE_CHECKING:``), and ``importlib.import_module`` / ``__import__`` called
with a literal name. Only the modules under tests/simulate/ may import bureau.simulate.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
ALLOWED = TESTS / "simulate"
FORBIDDEN = "bureau.simulate"


def _forbidden(name: str) -> bool:
    return name == FORBIDDEN or name.startswith(FORBIDDEN + ".")


def simulation_imports(source: str) -> Iterator[tuple[int, str]]:
    """(line, module) for every import of bureau.simulate (or below it) in ``source``."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _forbidden(alias.name):
                    yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                if _forbidden(node.module) or _forbidden(full):
                    yield node.lineno, node.module if _forbidden(node.module) else full
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            called = (func.attr if isinstance(func, ast.Attribute)
                      else func.id if isinstance(func, ast.Name) else "")
            first = node.args[0]
            if (called in ("import_module", "__import__") and isinstance(first, ast.Constant)
                    and isinstance(first.value, str) and _forbidden(first.value)):
                yield node.lineno, first.value


def offenders(root: Path = TESTS, allowed: Path = ALLOWED) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        if path.is_relative_to(allowed):
            continue
        for line, module in simulation_imports(path.read_text(encoding="utf-8")):
            found.append(f"{path.relative_to(root)}:{line} imports {module}")
    return found


def test_no_test_outside_tests_simulate_imports_the_simulation() -> None:
    assert offenders() == [], (
        "tests outside tests/simulate/ import bureau.simulate; take what they need from "
        "tests/support.py (or a module the service owns) instead")


def test_the_check_finds_what_it_looks_for(tmp_path: Path) -> None:
    """A planted example of each form is found; the simulation's own tests, names that
    merely start alike, and the word in a string or a comment are not."""
    planted = {
        "top.py": "from bureau.simulate.loopback import serving\n",
        "plain.py": "import bureau.simulate.driver as driver\n",
        "package.py": "from bureau import simulate\n",
        "local.py": "def f():\n    from bureau.simulate import world\n    return world\n",
        "typing.py": ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                      "    import bureau.simulate\n"),
        "dynamic.py": "import importlib\nm = importlib.import_module('bureau.simulate.cli')\n",
    }
    clean = {
        "fine.py": ("import bureau.simulated_elsewhere\nfrom bureau import scoring\n"
                    "# from bureau.simulate import x\nTEXT = 'bureau.simulate'\n"),
    }
    for name, text in {**planted, **clean}.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "simulate").mkdir()
    (tmp_path / "simulate" / "test_own.py").write_text("from bureau.simulate import cli\n")
    found = offenders(tmp_path, tmp_path / "simulate")
    assert sorted(f.split(":")[0] for f in found) == sorted(planted), found
    assert "package.py:1 imports bureau.simulate" in found
    assert "local.py:2 imports bureau.simulate" in found
