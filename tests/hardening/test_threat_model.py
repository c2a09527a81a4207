"""THREAT_MODEL.md points at the tests that show each defence: every ``file::test`` it
names exists (``::name`` after a file reference applies to that same file)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent


def _references() -> list[tuple[str, str | None]]:
    text = (ROOT / "THREAT_MODEL.md").read_text()
    refs: list[tuple[str, str | None]] = []
    for cell in re.split(r"[|\n]", text):
        current: str | None = None
        for m in re.finditer(r"(tests/[\w/]+\.py)(::\w+)?|(?<![\w/.])::(\w+)", cell):
            if m.group(1):
                current = m.group(1)
                refs.append((current, m.group(2)[2:] if m.group(2) else None))
            elif current is not None:
                refs.append((current, m.group(3)))
    return refs


def _functions(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {n.name for n in ast.walk(tree)
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}


def test_every_named_test_exists() -> None:
    refs = _references()
    assert len(refs) > 40
    for file, name in refs:
        path = ROOT / file
        assert path.exists(), file
        if name is not None:
            assert name in _functions(path), f"{file}::{name}"


def test_every_hardening_module_is_in_the_threat_model() -> None:
    named = {file for file, _ in _references()}
    for path in sorted((ROOT / "tests" / "hardening").glob("test_*.py")):
        if path.name != "test_threat_model.py":
            assert f"tests/hardening/{path.name}" in named, path.name
