"""The genesis and ``policy`` entries: which scoring policy each epoch is scored by."""

from __future__ import annotations

from bureau.storage import db


class PolicyEntries:
    """Reads the entries of kinds ``genesis`` and ``policy``, in seq order.

    The kinds as literals, not parameters: a generic plan could not prove that ``$1``
    and ``$2`` are the kinds of the partial index entries_policy_kinds (migration 0010),
    and would scan the ledger."""

    __slots__ = ("sql",)

    def __init__(self, genesis: str, policy: str) -> None:
        #: the one statement (public for EXPLAIN: tests/ledger/test_lean_indexes.py)
        self.sql = (f"SELECT seq, kind, entry FROM entries WHERE kind IN"
                    f" ('{genesis}', '{policy}') ORDER BY seq")

    async def rows(self, conn: db.Connection) -> list[db.Row]:
        """Rows (seq, kind, entry)."""
        rows: list[db.Row] = await conn.fetch(self.sql)
        return rows
