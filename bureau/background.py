"""Background work that one process does for all (the sealer's report building, the
publisher's tree heads and witnesses): an election by PostgreSQL advisory lock, and the
loop that runs a pass every interval or at once when woken.

A leader holds a session-level advisory lock on a connection it keeps: if the process
dies its session ends, the lock is free, and the next process to try takes over (if its
machine dies, TCP keepalives end the session: :data:`LEADER_KEEPALIVE`). A leader does
its writes on that same connection (the report workers aside, whose reports are the same
bytes whoever writes them), so a leader cut off from the database cannot write after
another has taken over: the connection that held the lock is the one that is gone.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from bureau import metrics
from bureau.storage import db, locks

log = logging.getLogger(__name__)

#: TCP keepalives on the leader's connection (idle seconds, seconds between probes,
#: probes): when the leader's *machine* vanishes, no FIN ever comes, and with the
#: kernel's defaults PostgreSQL would keep the session — and the lock — for over two
#: hours. With these the server drops the session, and frees the lock, within about
#: 25 s (ignored on a Unix socket, where the kernel reports a dead peer at once).
LEADER_KEEPALIVE = (10, 5, 3)


class Leadership:
    """Holds advisory lock ``lock`` while this process leads; ``role`` names the work
    in the log, ``label`` in ``bureau_leading{role=...}`` (so an operator sees which
    node leads), and ``on_elected`` runs each time this process becomes the leader."""

    def __init__(self, pool: db.Pool, lock: int, role: str, label: str,
                 on_elected: Callable[[], None] = lambda: None) -> None:
        self.pool = pool
        self.lock = lock
        self.role = role
        self.on_elected = on_elected
        self._conn: db.PoolConnection | None = None
        self._leading = metrics.LEADING.labels(role=label)
        self._leading.set(0)

    @property
    def held(self) -> bool:
        return self._conn is not None

    async def connection(self) -> db.Connection | None:
        """The leader's connection (which holds the lock), or None when another
        process leads."""
        if self._conn is not None and await self._alive(self._conn):
            return self._conn
        await self.resign()
        conn = await self.pool.acquire()
        try:
            got = await locks.try_lock(conn, self.lock)
            if got:
                await locks.keep_alive(conn, *LEADER_KEEPALIVE)
        except BaseException:
            # Cancelled (the task stopping) or failed between acquire and holding: the
            # connection goes back to the pool, which could not close while it is out.
            # Its lock, if taken, goes with the session: release() resets it.
            await _give_back(self.pool, conn)
            raise
        if not got:
            await self.pool.release(conn)
            return None
        self._conn = conn
        self._leading.set(1)
        self.on_elected()
        log.info("this process %s", self.role)
        return conn

    async def _alive(self, conn: db.Connection) -> bool:
        """Is the session that holds the lock still there? A session the server ended
        (keepalives unanswered, an administrator) shows only at the next round trip —
        or as the pool having taken the connection back, which asyncpg does when it
        sees the connection end (then even ``is_closed`` raises InterfaceError)."""
        try:
            if conn.is_closed():
                return False
            await locks.ping(conn)
        except Exception as exc:
            # Nothing about data fails ``SELECT 1``: whatever it raised (a server that
            # vanished can leave asyncpg's protocol in an error state rather than
            # closed), the session cannot be trusted to hold the lock.
            log.warning("this process no longer %s: its session is gone (%s)", self.role,
                        str(exc) or type(exc).__name__)
            return False
        return True

    async def resign(self) -> None:
        conn, self._conn = self._conn, None
        self._leading.set(0)
        if conn is None:
            return
        with contextlib.suppress(Exception):
            await locks.unlock(conn, self.lock)
        await _give_back(self.pool, conn)


async def _give_back(pool: db.Pool, conn: db.PoolConnection) -> None:
    """Return ``conn`` to ``pool`` whatever happens: a release that is itself cancelled
    (a stop while resigning) finishes shielded, and one that fails (the session died)
    terminates the connection, so ``Pool.close()`` never waits for it."""
    try:
        await asyncio.shield(pool.release(conn))
    except asyncio.CancelledError:
        raise
    except Exception:
        with contextlib.suppress(Exception):
            conn.terminate()


async def every(interval: float, wake: asyncio.Event,
                work: Callable[[bool], Awaitable[object]], name: str) -> None:
    """Run ``work(woken)`` every ``interval`` seconds, or as soon as ``wake`` is set
    (``woken`` then True), for ever; a failed pass is logged and the loop goes on."""
    while True:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(wake.wait(), interval)
        woken = wake.is_set()
        wake.clear()
        try:
            await work(woken)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if db.is_connection_error(exc):
                log.warning("%s: database unreachable: %s", name, exc)
            else:
                log.exception("%s: pass failed", name)


async def cancelled(task: asyncio.Task[None] | None) -> None:
    """Cancel a background task (if there is one) and wait until it has ended."""
    if task is not None:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
