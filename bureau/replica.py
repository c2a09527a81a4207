"""Where reads run: on the primary, or on a PostgreSQL streaming replica named by
``BUREAU_READ_DATABASE_URL`` (docs/scaling.md, "Read replicas").

Intake, admission state, everything under the ledger head lock, read nonces, the
sealer, the report builder and the tree-head publisher use the primary, always. The
public documents (reports, checkpoints, tree heads, proofs, policies, the pages) and
the parties' own files are read through :class:`ReadRouter`, which sends them to the
replica when there is one, under three rules:

1. **A party sees its own writes.** A file (``GET /v1/agents/{agent}/entries``,
   ``GET /v1/reporters/{reporter}/entries``) is read on the replica only once the
   replica has replayed the latest entry and the latest refusal signed by the file's
   party or by the reader, as the primary knows them when the read begins (one lookup
   on two indexes of the primary). Entries are appended in seq order under the head
   lock, and refusals are written by the same locked transactions (their ``ref`` is
   taken there), so a replica that holds entry ``S`` and refusal ``R`` holds every
   earlier one. The read waits for the replica up to ``BUREAU_READ_WAIT`` seconds,
   looking again every :data:`POLL_SECONDS`, then reads the primary instead. The check
   runs on the connection that then reads, so that with several replicas behind one
   address the replica checked is the replica read.
2. **No false "not found".** An answer that says something does not exist (no report
   at that epoch, no entry with that id, a tree size above the latest published) is
   asked again of the primary: the reader may have learned of it from the primary, or
   from a replica further ahead.
3. **A replica in trouble is passed over.** Unreachable (a connection that does not
   open within :data:`CONNECT_TIMEOUT`), or a query cancelled by a recovery conflict:
   the read goes to the primary, and so does every read for the next
   :data:`RETRY_SECONDS`, rather than each waiting for a failure of its own.

Anything else may be as old as the replica's replay delay: a file's entries signed by
others, the latest report and checkpoint, the latest tree head. Every read counts in
``bureau_reads_total`` by where it ran and why.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import TypeVar

from bureau import metrics
from bureau.intake.genesis import StartRefused
from bureau.storage import db, replicas

log = logging.getLogger(__name__)

T = TypeVar("T")

#: how often a read waiting for the replica looks again, in seconds
POLL_SECONDS = 0.005
#: a replica that could not answer is not asked again for this many seconds (every read
#: would otherwise wait for its own failed connection attempt)
RETRY_SECONDS = 5.0
#: how long a connection to the replica may take to open, in seconds
CONNECT_TIMEOUT = 2.0

@dataclass(frozen=True, slots=True)
class Watermark:
    """A party's latest write, as the primary knows it: entry ``seq`` and refusal
    ``ref`` (0: none)."""

    seq: int
    ref: int


async def watermark(conn: db.Connection, keys: Iterable[str]) -> Watermark:
    seq, ref = await replicas.latest_writes(conn, sorted(set(keys)))
    return Watermark(seq, ref)


async def replayed(conn: db.Connection, mark: Watermark) -> bool:
    """Does the database behind ``conn`` hold the writes ``mark`` names?"""
    return await replicas.replayed(conn, mark.seq, mark.ref)


def _replica_trouble(exc: BaseException) -> bool:
    """The replica cannot answer now (not: the query is wrong). A query on a hot standby
    can be cancelled when replay must remove rows it still sees (SQLSTATE 40001)."""
    return db.is_connection_error(exc) or isinstance(
        exc, replicas.REPLICA_ERRORS)


def _count(where: str, why: str) -> None:
    metrics.READS_TOTAL.labels(database=where, reason=why).inc()


async def open_replica(url: str, primary: db.Pool) -> db.Pool:
    """The replica's pool. It opens no connection until a read needs one, so a replica
    that is down when the bureau starts holds nothing up (its reads go to the primary);
    one that answers must hold this ledger: its genesis entry, once replayed, is the
    primary's (a URL naming another bureau's database would serve another ledger)."""
    pool = await db.create_pool(url, min_size=0, connect_timeout=CONNECT_TIMEOUT,
                                link="replica pool")
    try:
        async with primary.acquire() as conn:
            ours = await replicas.genesis_id(conn)
        async with pool.acquire() as conn:
            theirs = await replicas.genesis_id_if_any(conn)
    except Exception as exc:
        if not _replica_trouble(exc):
            await pool.close()
            raise
        log.warning("read replica unreachable at start; reads go to the primary until it "
                    "answers: %s", exc)
        return pool
    if theirs is not None and theirs != ours:
        await pool.close()
        raise StartRefused("BUREAU_READ_DATABASE_URL names a database with another ledger "
                           f"(its genesis entry is {theirs}, this ledger's is {ours}): it "
                           "must be a streaming replica of BUREAU_DATABASE_URL")
    return pool


def absent(value: object) -> bool:
    """The ``missing`` of reads whose "not found" is None."""
    return value is None


ReadFn = Callable[[db.Connection], Awaitable[T]]


class ReadRouter:
    """Runs reads on the replica when there is one (see the module docstring), else on
    the primary. ``wait``: ``BUREAU_READ_WAIT``."""

    def __init__(self, primary: db.Pool, replica: db.Pool | None,
                 wait: float) -> None:
        self.primary = primary
        self.replica = replica
        self.wait = wait
        self._resting_until = 0.0  # monotonic time until which the replica is passed over

    def _replica_now(self) -> db.Pool | None:
        """The replica's pool, unless there is none or it is resting after a failure."""
        if self.replica is None or time.monotonic() < self._resting_until:
            return None
        return self.replica

    def _failed(self, exc: BaseException) -> None:
        """Rule 3: note a replica that cannot answer (or re-raise what is not that)."""
        if not _replica_trouble(exc):
            raise exc
        self._resting_until = time.monotonic() + RETRY_SECONDS
        log.warning("read replica cannot answer; reading the primary for %g s: %s",
                    RETRY_SECONDS, exc)

    async def _on_primary(self, fn: ReadFn[T], why: str) -> T:
        async with self.primary.acquire() as conn:
            result = await fn(conn)
        _count("primary", why)
        return result

    async def run(self, fn: ReadFn[T], *, missing: Callable[[T], bool] = lambda _: False
                  ) -> T:
        """``fn`` on the replica; on the primary when there is no replica, when the
        replica cannot answer, or when its answer is one that ``missing`` says is
        "not found" (rule 2)."""
        replica = self._replica_now()
        if replica is None:
            return await self._on_primary(fn, self._why_not())
        try:
            async with replica.acquire() as conn:
                result = await fn(conn)
        except Exception as exc:
            self._failed(exc)
            return await self._on_primary(fn, "replica_unavailable")
        if missing(result):
            return await self._on_primary(fn, "not_found_on_replica")
        _count("replica", "current")
        return result

    async def run_after(self, writers: Iterable[str], fn: ReadFn[T]) -> T:
        """``fn`` on a database that holds every entry and refusal signed by
        ``writers`` that the primary holds now (rule 1): the replica once it has
        replayed them, within ``wait``; otherwise the primary."""
        replica = self._replica_now()
        if replica is None:
            return await self._on_primary(fn, self._why_not())
        async with self.primary.acquire() as conn:
            mark = await watermark(conn, writers)
        try:
            async with replica.acquire() as conn:
                if await self._caught_up(conn, mark):
                    result = await fn(conn)
                    _count("replica", "current")
                    return result
        except Exception as exc:
            self._failed(exc)
            return await self._on_primary(fn, "replica_unavailable")
        return await self._on_primary(fn, "replica_behind")

    def _why_not(self) -> str:
        return "no_replica" if self.replica is None else "replica_unavailable"

    async def _caught_up(self, conn: db.Connection, mark: Watermark) -> bool:
        """Has the replica behind ``conn`` replayed ``mark``, or does it within
        ``wait``? (Polled: a standby can neither LISTEN nor be notified.)"""
        deadline = time.monotonic() + self.wait
        while not await replayed(conn, mark):
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(POLL_SECONDS)
        return True

    async def close(self) -> None:
        if self.replica is not None:
            await self.replica.close()
