"""The elected leader's connection (bureau.background.Leadership) over TCP: it carries
the keepalives that end its session — and free its lock — when its machine vanishes,
and another process is elected once the leader's session is gone."""

from __future__ import annotations

import asyncpg

from bureau.background import LEADER_KEEPALIVE, Leadership
from bureau.storage import db
from tests.scaling.replication import Pair

LOCK = 0x6275726561750099


async def test_the_leader_keeps_its_session_alive_and_hands_over(pair: Pair) -> None:
    first = await db.create_pool(pair.primary.url())
    second = await db.create_pool(pair.primary.url())
    a = Leadership(first, LOCK, "leads the test", "test")
    b = Leadership(second, LOCK, "leads the test", "test")
    try:
        conn = await a.connection()
        assert conn is not None and await b.connection() is None
        shown = [int(await conn.fetchval(f"SHOW tcp_keepalives_{name}"))
                 for name in ("idle", "interval", "count")]
        assert tuple(shown) == LEADER_KEEPALIVE
        # The server ends the leader's session (as it does when keepalives go
        # unanswered): the lock is free and the other process is elected.
        admin = await asyncpg.connect(pair.primary.url())
        try:
            await admin.execute("SELECT pg_terminate_backend(pid) FROM pg_locks WHERE"
                                " locktype = 'advisory' AND objid = $1 AND granted",
                                LOCK & 0xFFFFFFFF)
        finally:
            await admin.close()
        taken = None
        for _ in range(500):  # each try is a round trip: bounded by progress, not time
            taken = await b.connection()
            if taken is not None:
                break
        assert taken is not None and b.held
        assert await a.connection() is None, "the old leader finds itself deposed"
    finally:
        await a.resign()
        await b.resign()
        await first.close()
        await second.close()
