"""Only the indexes a query needs (migration 0010, issue 15): every index is written for
every row under the ledger lock. The ledger's policies are read through a partial index
that only the genesis and ``policy`` entries are in."""

from __future__ import annotations

import asyncpg

from bureau.evidence import policies
from bureau.kinds import GENESIS, POLICY
from tests.support import BureauUnderTest


async def _indexes(conn: asyncpg.Connection, table: str) -> set[str]:
    rows = await conn.fetch("SELECT indexname FROM pg_indexes WHERE tablename = $1", table)
    return {r["indexname"] for r in rows}


async def test_the_indexes_no_query_reads_are_gone(bureau: BureauUnderTest) -> None:
    conn = await asyncpg.connect(bureau.database_url)
    try:
        entries = await _indexes(conn, "entries")
        assert "entries_kind" not in entries and "entries_policy_kinds" in entries
        assert "facts_subject" not in await _indexes(conn, "facts")
        assert "probes_subject" not in await _indexes(conn, "probes")
    finally:
        await conn.close()


async def test_the_policies_are_read_through_the_partial_index(
        bureau: BureauUnderTest) -> None:
    """Planned generically (as a cached prepared statement is), the query can still use
    the partial index: the kinds are literals, which the index's predicate matches."""
    conn = await asyncpg.connect(bureau.database_url)
    try:
        await conn.execute("SET enable_seqscan = off; SET plan_cache_mode = force_generic_plan")
        plan = "\n".join(r[0] for r in await conn.fetch(
            "EXPLAIN " + policies._POLICY_ENTRIES.sql))
        assert "entries_policy_kinds" in plan, plan
        await conn.execute("RESET enable_seqscan")
        through_index = await conn.fetch(policies._POLICY_ENTRIES.sql)
        every_row = await conn.fetch(
            "SELECT seq, kind, entry FROM entries WHERE kind = $1 OR kind = $2 ORDER BY seq",
            GENESIS.name, POLICY.name)
        assert through_index == every_row and through_index[0]["kind"] == GENESIS.name
    finally:
        await conn.close()
