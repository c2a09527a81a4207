"""What an operator reads of the ledger and of its server (``bureau status``, the ledger
line, what ``serve`` says as it stops): counts, the seal backlog, the database's size
and its streaming replicas."""

from __future__ import annotations

import datetime as dt
from typing import NamedTuple

from bureau.storage import db


class Counts(NamedTuple):
    entries: int
    #: the latest epoch with a checkpoint; None before the first
    sealed: int | None


class Backlog(NamedTuple):
    #: the earliest epoch with an entry after the latest seal; None when all are sealed
    next_busy: int | None
    #: when the latest entry that is not a seal was recorded
    last_at: dt.datetime | None
    #: when the latest seal was recorded
    sealed_at: dt.datetime | None


class Replica(NamedTuple):
    name: str
    address: str | None
    state: str
    replay_lag_seconds: float | None


async def has_ledger(conn: db.Connection) -> bool:
    """Is the database migrated (a fresh one reads as no ledger)?"""
    return bool(await conn.fetchval("SELECT to_regclass('entries') IS NOT NULL"
                                    " AND to_regclass('checkpoints') IS NOT NULL"))


async def counts(conn: db.Connection) -> Counts:
    row = await conn.fetchrow("SELECT (SELECT max(seq) FROM entries) AS entries,"
                              " (SELECT max(epoch) FROM checkpoints) AS sealed")
    assert row is not None
    return Counts(row["entries"] or 0, row["sealed"])


async def entries(conn: db.Connection) -> int:
    """The ledger's length."""
    return int(await conn.fetchval("SELECT coalesce(max(seq), 0) FROM entries"))


async def waiting_for_seal(conn: db.Connection) -> int:
    """The entries (seals aside) after the latest seal: what waits for its epoch's."""
    return int(await conn.fetchval(
        "SELECT count(*) FROM entries WHERE kind <> 'seal' AND seq > coalesce("
        "(SELECT last_seq FROM seals ORDER BY epoch DESC LIMIT 1), 0)"))


async def database_bytes(conn: db.Connection) -> int:
    return int(await conn.fetchval("SELECT pg_database_size(current_database())"))


async def backlog(conn: db.Connection) -> Backlog:
    row = await conn.fetchrow(
        "SELECT (SELECT min(epoch) FROM entries WHERE kind <> 'seal' AND seq > coalesce("
        "  (SELECT last_seq FROM seals ORDER BY epoch DESC LIMIT 1), 0)) AS next_busy,"
        " (SELECT recorded_at FROM entries WHERE kind <> 'seal' ORDER BY seq DESC LIMIT 1)"
        "  AS last_at,"
        " (SELECT e.recorded_at FROM seals s JOIN entries e ON e.seq = s.seq"
        "  ORDER BY s.epoch DESC LIMIT 1) AS sealed_at")
    assert row is not None
    return Backlog(row["next_busy"], row["last_at"], row["sealed_at"])


async def replicas(conn: db.Connection) -> list[Replica]:
    """The standbys streaming from this server (``pg_stat_replication``)."""
    return [Replica(r["application_name"], r["addr"], r["state"], r["lag"])
            for r in await conn.fetch(
                "SELECT application_name, client_addr::text AS addr, state,"
                " extract(epoch FROM replay_lag)::float AS lag FROM pg_stat_replication")]
