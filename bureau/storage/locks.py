"""Session-level advisory locks: the election of one process for work done for all
(bureau.background's ``Leadership``), and who holds each lock (``bureau status``)."""

from __future__ import annotations

import datetime as dt
from typing import NamedTuple

from bureau.storage import db

_KEEPALIVE_SQL = ("SELECT set_config('tcp_keepalives_idle', $1, false),"
                  " set_config('tcp_keepalives_interval', $2, false),"
                  " set_config('tcp_keepalives_count', $3, false)")


class Holder(NamedTuple):
    """The server session that holds a lock."""

    pid: int
    address: str | None  # None: a local socket
    since: dt.datetime


async def try_lock(conn: db.Connection, lock: int) -> bool:
    """Take advisory lock ``lock`` for ``conn``'s session if no session holds it."""
    return bool(await conn.fetchval("SELECT pg_try_advisory_lock($1)", lock))


async def unlock(conn: db.Connection, lock: int) -> None:
    await conn.execute("SELECT pg_advisory_unlock($1)", lock)


async def keep_alive(conn: db.Connection, idle: int, interval: int, count: int) -> None:
    """TCP keepalives on ``conn``'s session (seconds idle, seconds between probes,
    probes), so the server ends it — and frees its locks — when its client's machine
    vanishes. Session settings: the pool resets them when the connection goes back."""
    await conn.execute(_KEEPALIVE_SQL, str(idle), str(interval), str(count))


async def ping(conn: db.Connection) -> None:
    """One round trip: raises when the session is gone."""
    await conn.execute("SELECT 1")


async def holder(conn: db.Connection, lock: int) -> Holder | None:
    """Who holds advisory lock ``lock`` (a bigint key: classid is its high half, objid
    its low half), or None."""
    row = await conn.fetchrow(
        "SELECT a.pid, a.client_addr::text AS addr, a.backend_start FROM pg_locks l"
        " JOIN pg_stat_activity a USING (pid) WHERE l.locktype = 'advisory'"
        " AND l.granted AND l.classid = $1 AND l.objid = $2 AND l.objsubid = 1",
        lock >> 32, lock & 0xFFFFFFFF)
    return None if row is None else Holder(row["pid"], row["addr"], row["backend_start"])
