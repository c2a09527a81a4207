"""Every transaction is named and timed: explicit ones are opened only in
``bureau/storage/db.py`` (``db.run_tx``, ``db.transaction``); the group commit, which sends its
own BEGIN (``bureau/storage/chain.py``), runs under ``db.TxTimer``."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent


def test_no_anonymous_transactions() -> None:
    begins = []
    for path in sorted((ROOT / "bureau").rglob("*.py")):
        rel = str(path.relative_to(ROOT))
        tree = ast.parse(path.read_text(), rel)
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr == "transaction" \
                    and rel != "bureau/storage/db.py":
                assert ast.unparse(node.value) == "db", f"{rel}:{node.lineno}"
            if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                    and node.value.lstrip().upper().startswith("BEGIN"):
                begins.append((rel, node.lineno))
    assert [rel for rel, _ in begins] == ["bureau/storage/chain.py"]
    committer = (ROOT / "bureau" / "intake" / "committer.py").read_text()
    assert 'with db.TxTimer("append_group")' in committer
