"""``ledger_keys`` (migrations/0011_ledger_keys.sql), one row per period of the keys in
force, and the genesis entry as the ledger's settings are read from it
(bureau.ledger_keys, bureau.intake.genesis)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from bureau.storage import db


@dataclass(frozen=True, slots=True)
class KeyPeriod:
    """From entry ``from_seq`` on (until the next period), the bureau signs with
    ``bureau`` and the admins are ``admins`` (sorted); set by entry ``seq``."""

    from_seq: int
    seq: int
    bureau: str
    admins: tuple[str, ...]
    issued_at: dt.datetime | None  # None: the genesis entry's


_HISTORY_SQL = "SELECT from_seq, seq, bureau, admins, issued_at FROM ledger_keys ORDER BY from_seq"
_AT_SQL = ("SELECT bureau FROM ledger_keys WHERE from_seq <= greatest($1::bigint, 1)"
           " ORDER BY from_seq DESC LIMIT 1")
_LATEST_SQL = "SELECT bureau FROM ledger_keys ORDER BY from_seq DESC LIMIT 1"
_ADMINS_SQL = "SELECT admins FROM ledger_keys ORDER BY from_seq DESC LIMIT 1"


async def history(conn: db.Connection) -> list[KeyPeriod]:
    """Every period, oldest first (empty before the genesis entry)."""
    return [KeyPeriod(r["from_seq"], r["seq"], r["bureau"], tuple(r["admins"]),
                      r["issued_at"])
            for r in await conn.fetch(_HISTORY_SQL)]


async def key_at(conn: db.Connection, seq: int) -> str | None:
    """The bureau key of the period in force at entry ``seq`` (a size-0 tree counts as
    entry 1's); None before the genesis entry."""
    key: str | None = await conn.fetchval(_AT_SQL, seq)
    return key


async def latest_key(conn: db.Connection) -> str | None:
    key: str | None = await conn.fetchval(_LATEST_SQL)
    return key


async def latest_admins(conn: db.Connection) -> tuple[str, ...]:
    """The latest period's admins (none before the genesis entry)."""
    admins = await conn.fetchval(_ADMINS_SQL)
    return tuple(admins or ())


async def has_table(conn: db.Connection) -> bool:
    """Has this database the ``ledger_keys`` table (is it migrated that far)?"""
    return await conn.fetchval("SELECT to_regclass('ledger_keys')") is not None


async def first_entry(conn: db.Connection) -> tuple[str, bytes] | None:
    """Entry 1's kind and stored bytes (the genesis entry), or None on an empty
    ledger."""
    row = await conn.fetchrow("SELECT kind, entry FROM entries WHERE seq = 1")
    return None if row is None else (row["kind"], bytes(row["entry"]))
