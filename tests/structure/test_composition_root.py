"""``bureau/http/app.py`` is the one composition root: every application key is declared
in ``bureau/http/keys.py``, and only the app wires parts together (the ledger's seal
hook, the settler, ``cleanup_ctx``)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent


def _trees(*dirs: str) -> list[tuple[str, ast.Module]]:
    return [(str(p.relative_to(ROOT)), ast.parse(p.read_text(), str(p)))
            for d in dirs for p in sorted((ROOT / d).rglob("*.py"))]


def test_every_app_key_is_declared_in_keys() -> None:
    for path, tree in _trees("bureau"):
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and ast.unparse(node.func) == "web.AppKey":
                assert path == "bureau/http/keys.py", path


def test_only_the_app_wires_hooks_and_lifetimes() -> None:
    for path, tree in _trees("bureau"):
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Attribute) and target.attr == "seal_hook" \
                            and ast.unparse(target.value) != "self":
                        assert path == "bureau/http/app.py", path
            if isinstance(node, ast.Attribute) and node.attr == "cleanup_ctx":
                assert path == "bureau/http/app.py", path


def test_nothing_imports_application_keys_from_a_routes_module() -> None:
    from bureau.http import keys

    names = {n for n in vars(keys) if n.isupper()}
    for path, tree in _trees("bureau", "tests", "bench"):
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                    "bureau.http.routes"):
                imported = {a.name for a in node.names}
                assert not imported & names, f"{path} imports {imported & names}"
