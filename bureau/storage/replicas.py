"""What routing reads to a streaming replica (bureau.replica) asks of a database: a
party's latest writes on the primary, whether a replica has replayed them, and which
ledger a database holds."""

from __future__ import annotations

from collections.abc import Sequence

import asyncpg

from bureau.storage import db

#: what a query on a hot standby raises when it cannot answer now (not: the query is
#: wrong): cancelled because replay must remove rows it still sees (SQLSTATE 40001), or
#: the standby not accepting connections yet
REPLICA_ERRORS: tuple[type[Exception], ...] = (
    asyncpg.SerializationError, asyncpg.CannotConnectNowError)

# The latest entry and refusal each of the keys signed, on the primary: a backward scan
# of entries_signer and refusals_signer per key.
_WATERMARK_SQL = """
    SELECT coalesce(max(s.seq), 0) AS seq, coalesce(max(s.ref), 0) AS ref
    FROM unnest($1::text[]) AS k(key), LATERAL (SELECT
        (SELECT max(seq) FROM entries WHERE signer = k.key) AS seq,
        (SELECT max(ref) FROM refusals WHERE signer = k.key) AS ref) AS s
"""

_REPLAYED_SQL = """
    SELECT ($1 = 0 OR EXISTS (SELECT 1 FROM entries WHERE seq = $1))
       AND ($2 = 0 OR EXISTS (SELECT 1 FROM refusals WHERE ref = $2))
"""


async def latest_writes(conn: db.Connection, keys: Sequence[str]) -> tuple[int, int]:
    """(seq, ref): the latest entry and refusal any of ``keys`` signed (0: none)."""
    row = await conn.fetchrow(_WATERMARK_SQL, keys)
    assert row is not None
    return row["seq"], row["ref"]


async def replayed(conn: db.Connection, seq: int, ref: int) -> bool:
    """Does the database behind ``conn`` hold entry ``seq`` and refusal ``ref``?"""
    return bool(await conn.fetchval(_REPLAYED_SQL, seq, ref))


async def genesis_id(conn: db.Connection) -> str | None:
    """The id of entry 1 (None: no ledger, or one with no entry yet)."""
    value: str | None = await conn.fetchval("SELECT id FROM entries WHERE seq = 1")
    return value


async def genesis_id_if_any(conn: db.Connection) -> str | None:
    """:func:`genesis_id`, also on a database not migrated (yet): None there."""
    value: str | None = await conn.fetchval(
        "SELECT id FROM entries WHERE seq = 1"
        if await conn.fetchval("SELECT to_regclass('entries') IS NOT NULL") else
        "SELECT NULL::text")
    return value
