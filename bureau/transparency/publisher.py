"""The publisher: the background task that signs a new tree head every
``BUREAU_CHECKPOINT_INTERVAL`` seconds (at most 10, SPEC §8.1) while the ledger grows,
and hands each one to the witnesses.

One elected process does it: the holder of a PostgreSQL advisory lock, taken on a
connection kept for as long as the process leads. If that process dies its session
ends, the lock is free, and the next process to tick takes over — starting, for each
witness, from the cosignatures kept in the database. Every process signs the current
head once when it starts (:meth:`Publisher.publish_now`), so ``GET /checkpoint`` has a
note before the first request, and refuses to start on a ledger that no longer extends
a head it published (:class:`~bureau.transparency.heads.InconsistentHead`).
"""

from __future__ import annotations

import asyncio
import logging

from bureau.background import Leadership, every
from bureau.ledger_keys import NotInForce, Retired
from bureau.storage import db
from bureau.transparency import heads
from bureau.transparency.heads import Head, LogKey
from bureau.transparency.witnesses import Witnesses
from reporters.tlog.witness import Witness

log = logging.getLogger(__name__)

#: pg advisory lock held by the one process that publishes tree heads and pushes them
PUBLISHER_LOCK = 0x6275726561750004


class Publisher:
    def __init__(self, pool: db.Pool, log_key: LogKey, interval: float,
                 witnesses: tuple[Witness, ...] = ()) -> None:
        self.pool = pool
        self.log_key = log_key
        self.interval = interval
        self.witnesses = Witnesses(witnesses, pool, log_key.origin)
        self._leader = Leadership(pool, PUBLISHER_LOCK, "publishes tree heads and sends "
                                  "them to witnesses", "tree_heads", self.witnesses.forget)
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        #: says once that this process's key was rotated away (it then signs nothing)
        self.retired = Retired("publisher")

    async def publish_now(self) -> Head | None:
        """Sign the current head if it is new (any process, leader or not)."""
        async with self.pool.acquire() as conn:
            return await heads.publish(conn, self.log_key)

    async def start(self) -> None:
        try:
            await self.publish_now()
        except NotInForce as exc:
            # The head's last entry is a `keys` entry rotating to this process's key
            # (issue 35): the key in force at that size is the old one, which signs it;
            # this key signs from the next entry on. Starting is right; refusing was not.
            log.info("the tree head at the ledger's size is not this key's to sign (%s); "
                     "it signs from the next entry on", exc.detail)
        await self.witnesses.start()
        self._task = asyncio.create_task(self._run(), name="tree-head publisher")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        await self.witnesses.stop()
        await self._leader.resign()

    def wake(self) -> None:
        """Tick now rather than at the end of the interval."""
        self._wake.set()

    @property
    def leading(self) -> bool:
        return self._leader.held

    async def tick(self) -> Head | None:
        """One pass: if this process leads, publish the head if it is new, and offer the
        latest head to every witness (a pusher sends it only when its witness is behind).
        Returns the latest head, or None when another process leads."""
        conn = await self._leader.connection()
        if conn is None:
            return None
        try:
            await heads.publish(conn, self.log_key)
            latest = await heads.latest(conn)
        except heads.InconsistentHead:
            log.exception("NOT PUBLISHING: the ledger no longer extends a published head")
            return None
        except NotInForce as exc:
            self.retired.note(exc)
            return None
        except BaseException:
            await self._leader.resign()
            raise
        if latest is not None:
            self.witnesses.offer(latest)
        return latest

    async def _run(self) -> None:
        await every(self.interval, self._wake, lambda _: self.tick(), "publisher")
