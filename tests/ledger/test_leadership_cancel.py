"""A Leadership cancelled while it takes the lock gives its connection back (under
full-suite load, tests/ledger/test_append_only.py's teardown hung on "Pool.close() is
taking over 60 seconds": the leader task was cancelled between acquiring a connection
and holding it, and the connection never went back to the pool)."""

from __future__ import annotations

import asyncio

from bureau.background import Leadership
from bureau.storage import db


async def test_cancelled_at_every_step_the_connection_goes_back(database_url: str) -> None:
    pool = await db.create_pool(database_url, min_size=1, max_size=2)
    try:
        for steps in range(40):  # cancel after 0, 1, 2, ... turns of the event loop
            leader = Leadership(pool, 0x62757265617500ff, "tests", "tests")
            task = asyncio.create_task(leader.connection())
            for _ in range(steps):
                await asyncio.sleep(0)
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            await leader.resign()
            # every connection is back: the pool can hand out both at once
            async with pool.acquire(timeout=5) as a, pool.acquire(timeout=5) as b:
                assert await a.fetchval("SELECT 1") == await b.fetchval("SELECT 1") == 1
        await asyncio.wait_for(pool.close(), 10)
    finally:
        pool.terminate()
