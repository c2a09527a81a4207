"""Shared helpers for the client tests: counting what the real ledger holds."""

from __future__ import annotations

import asyncpg


async def fact_counts(database_url: str) -> tuple[int, int]:
    """(fact entries, distinct content keys among them) in the ledger."""
    conn = await asyncpg.connect(database_url)
    try:
        row = await conn.fetchrow(
            "SELECT count(*) AS n, count(DISTINCT content_key) AS d FROM entries"
            " WHERE kind = 'fact'")
    finally:
        await conn.close()
    assert row is not None
    return int(row["n"]), int(row["d"])


#: A URL nothing listens on: connections are refused at once.
DEAD_URL = "http://127.0.0.1:9"
