"""Epochs and seals (SPEC §8), and the sealer: the background task that seals elapsed
epochs and has their reports built.

**Sealing** happens under the ledger head lock
(:meth:`bureau.intake.committer.Committer.run_locked`),
which serialises writers across every bureau process on the database, so the check
"is epoch E sealed yet?" and the append of its seal cannot interleave with another
process doing the same. The ``seals`` table (primary key ``epoch``), written in the same
transaction, is a second guard: a duplicate seal could not commit.

* The epochs sealed are those that have **elapsed** — every epoch before the epoch of
  the group's ``recorded_at`` (which never goes backwards, so no entry can ever land in
  a sealed epoch) — and that hold at least one entry other than a ``seal``.
  An epoch in which nothing was admitted gets no seal, no reports, no checkpoint: there
  is nothing new to say, and the previous reports stand. (Seal entries themselves do
  not make an epoch busy: otherwise a quiet bureau would seal forever, each seal
  creating the next epoch's only entry.)
* Seals are appended oldest first; the body of the seal of ``E`` is
  ``{"epoch": E, "seq": s, "head": id}`` where ``s`` is the last entry whose epoch is at
  most ``E``.

**Report building** is derived work, done outside the lock: only the process holding
the builder advisory lock (one per database) does it, so one process keeps the
incremental state warm and the others keep no copy of it. If that process dies its
session ends, the lock is free, and the next sealer to tick takes over.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
from collections.abc import Callable

from bureau import ledger_keys, metrics
from bureau.background import Leadership, every
from bureau.config import Config
from bureau.intake.chaining import GroupTx
from bureau.intake.clock import epoch_of
from bureau.intake.committer import Committer
from bureau.kinds import SEAL
from bureau.storage import db, entries, reports
from bureau.views.builder import ReportBuilder

log = logging.getLogger(__name__)

#: pg advisory lock held, for its whole life, by the one process that builds reports
BUILDER_LOCK = 0x6275726561750003



async def seal_elapsed(tx: GroupTx) -> list[int]:
    """Under the ledger lock: append one ``seal`` per elapsed, busy, unsealed epoch,
    oldest first. Returns the epochs sealed."""
    conn = tx.conn
    # Everything after the last sealed entry is in a later epoch (epochs never go back).
    todo = await reports.busy_epochs(conn, await reports.last_sealed_seq(conn), tx.epoch,
                                     SEAL.name)
    if not todo:
        return []
    heads = await entries.ids_at(conn, [s for _, s in todo])
    for epoch, last_seq in todo:
        head = heads[last_seq]
        _, seq = tx.append(SEAL.name, body={"epoch": epoch, "seq": last_seq, "head": head})
        await reports.insert_seal(conn, epoch, seq, last_seq, head)
        metrics.SEALS_TOTAL.inc()
    log.info("sealed epochs %s", [e for e, _ in todo])
    return [e for e, _ in todo]


async def seal_due(conn: db.Connection, current_epoch: int) -> bool:
    """A cheap look, outside the lock: is there a busy, elapsed epoch not yet sealed?"""
    return await reports.seal_due(conn, current_epoch, SEAL.name)


class Sealer:
    """Seals elapsed epochs every ``config.seal_interval`` seconds (and at once when
    an admin ``seal`` is admitted), then builds the reports of sealed epochs."""

    def __init__(self, pool: db.Pool, ledger: Committer, builder: ReportBuilder,
                 config: Config, clock: Callable[[], dt.datetime]) -> None:
        self.pool = pool
        self.ledger = ledger
        self.builder = builder
        self.config = config
        self.clock = clock
        self._wake = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None  # the sealer's, see wake
        self._task: asyncio.Task[None] | None = None
        self._leader = Leadership(pool, BUILDER_LOCK, "builds the reports", "reports")
        self._lock = asyncio.Lock()  # one pass at a time in this process
        self.retired = ledger_keys.Retired("sealer")

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._task = asyncio.create_task(self._run(), name="sealer")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        await self._leader.resign()
        self.builder.close()

    def wake(self) -> None:
        """From any thread (the seal hook runs on the ledger committer's)."""
        if self._loop is None:  # not started: nothing waits on the event yet
            self._wake.set()
            return
        with contextlib.suppress(RuntimeError):  # its loop has closed: nothing to wake
            self._loop.call_soon_threadsafe(self._wake.set)

    async def on_seal_request(self, tx: GroupTx) -> None:
        """The ledger's hook for an admitted admin ``seal``, on the committer's thread:
        seal in the same group, then have the reports built once that group has
        committed."""
        if await self._key_in_force(tx.conn) and await seal_elapsed(tx):
            self.wake()

    async def _key_in_force(self, conn: db.Connection) -> bool:
        """Is this process's key the one the next entries are signed for? A process
        whose key was rotated away seals and signs nothing (SPEC §3 r3)."""
        try:
            await ledger_keys.require_in_force(conn, self.builder.log_key.key_id,
                                               await entries.next_seq(conn))
        except ledger_keys.NotInForce as exc:
            self.retired.note(exc)
            return False
        return True

    async def seal_now(self) -> list[int]:
        """Take the ledger lock and seal whatever has elapsed."""
        sealed: list[int] = await self.ledger.run_locked(seal_elapsed)
        return sealed

    async def seal_once(self, *, force: bool = False) -> list[int]:
        """One pass: seal if due (or ``force``), then build pending reports if this
        process is the builder. Returns the epochs whose reports it built."""
        async with self._lock:
            current = epoch_of(self.clock(), self.config.epoch_seconds)
            async with self.pool.acquire() as conn:
                # A process whose key was rotated away seals nothing more, but still
                # builds the epochs its key is the one in force for (their last entry
                # came before the rotation): no other key may sign them.
                signing = await self._key_in_force(conn)
                due = signing and await seal_due(conn, current)
            if signing and (due or force):
                # Through the ledger queue even when forced: it runs after any group
                # still committing (e.g. the admin seal that woke us).
                await self.seal_now()
            leader = await self._leader.connection()
            if leader is None:
                return []
            try:
                built = await self.builder.build_pending(leader)
            except ledger_keys.NotInForce as exc:  # an epoch sealed under another key
                self.retired.note(exc)
                return []
            except BaseException:
                # The incremental state may be half-updated: start again from the
                # entries rather than trust it.
                self.builder.reset()
                await self._leader.resign()
                raise
            if self.builder.passed_over:
                # Epochs only another key may sign are waiting: let a process that holds
                # it take the builder's lock at its next pass (a node not yet restarted
                # after a rotation finishes the epochs that are its key's).
                await self._leader.resign()
            return built

    async def _run(self) -> None:
        await every(self.config.seal_interval, self._wake,
                    lambda woken: self.seal_once(force=woken), "sealer")
