"""Stage 6 of intake: the append-only, hash-chained ledger, written by group commit.

Every request hands its verified submissions to :meth:`Committer.submit` and waits. One
committer per process — on a thread of its own with its own event loop and its own
database connection in a serving process (so that the time it holds the lock is not
stretched by the request handlers' work on their loop), on the process's own loop in
the sequencer (bureau.intake.sequencer), where no handler competes — takes everything
queued, opens one transaction, locks the
single ``ledger_head`` row (which serialises writers across *all* bureau processes on the
database), judges each submission against the state under that lock, appends the
admitted ones with contiguous seqs, and commits. Only then are the waiting requests
answered: an acknowledgement is always durable. If the database goes away before
``COMMIT`` returns, nothing of the group was written and every waiting request hears
``UNAVAILABLE``; a client re-sending the same envelopes gets ``duplicate`` for whatever
did commit, because duplicates are recognised by content.

One bad submission never fails another (SPEC §5 r2). Should the database refuse a group
for any other reason — a row it cannot store, whatever put it there — the group is rolled
back and committed again in two halves, each half split again while it fails, until
the submission that cannot be stored is alone: it is refused by itself (``500
UNAVAILABLE``, ``internal_error``) and logged; every other one is judged and stored as
if it had never been sent (the halves commit in input order, so a later submission
still sees every earlier one). A group that commits costs nothing extra.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import TypeVar

from bureau import metrics
from bureau.config import Config
from bureau.errors import BureauError, Code, Pushback
from bureau.intake.chaining import GroupTx
from bureau.intake.clock import Clock, utcnow
from bureau.intake.flush import flush
from bureau.intake.judging import Result, judge_one
from bureau.intake.state import GroupState, Submission
from bureau.intake.units import (
    WORK,
    Item,
    LockedWork,
    Unit,
    answer,
    items_of,
    shutting_down,
)
from bureau.storage import chain, db
from bureau.transparency.tree import TreeTip

log = logging.getLogger(__name__)

T = TypeVar("T")


class _LockSection:
    """Times one group's section under the head lock, from the lock's grant to COMMIT's
    return, into ``bureau_commit_section_seconds_total``: the committer thread's CPU
    (``python``: judging, chaining, encoding, asyncpg) and the rest of the wall time
    (``database``: waiting on PostgreSQL's answers, and on the GIL)."""

    __slots__ = ("_cpu", "_wall")

    def __init__(self) -> None:
        self._wall = time.perf_counter()
        self._cpu = time.thread_time()

    def close(self, envelopes: int) -> None:
        wall = time.perf_counter() - self._wall
        cpu = min(wall, time.thread_time() - self._cpu)
        metrics.COMMIT_SECTION_SECONDS.labels(part="python").inc(cpu)
        metrics.COMMIT_SECTION_SECONDS.labels(part="database").inc(wall - cpu)
        metrics.COMMIT_SECTION_ENVELOPES.inc(envelopes)


class Committer:
    """The single writer path of a bureau process.

    The committer runs on its own thread and event loop (:meth:`start`), with a
    connection of its own to ``database_url``; callers on any loop hand it units
    thread-safely and await futures of their own loop. Locked work (:meth:`run_locked`,
    ``seal_hook``) runs on the committer's thread: it may use ``tx.conn`` and must reach
    anything of its caller's loop thread-safely."""

    def __init__(self, database_url: str, config: Config, clock: Clock = utcnow, *,
                 sequencer: bool = False) -> None:
        self.database_url = database_url
        #: this is the node's sequencer (bureau.intake.sequencer): its group sizes are
        #: the ones ``bureau_sequencer_group_envelopes`` shows
        self.sequencer = sequencer
        self.config = config
        self.clock = clock
        self._loop: asyncio.AbstractEventLoop | None = None  # the committer's
        self._thread: threading.Thread | None = None
        self._queue: asyncio.Queue[Unit] | None = None  # of the committer's loop
        #: guards ``_pending``, which callers raise and the committer lowers
        self._counting = threading.Lock()
        self._pending = 0
        #: envelopes of requests past their body read and not yet answered (see
        #: :meth:`admitting`); always at least ``_pending``
        self._inflight = 0
        self._task: asyncio.Task[None] | None = None
        self._conn: db.Connection | None = None  # the committer's, see _connection
        #: says in the log when the committer lost the database and where it reconnected
        self._link = db.Link("committer")
        #: run under the lock, before the flush, in a group that admitted an admin
        #: ``seal`` (SPEC §3: it closes every elapsed epoch); set by bureau.views.seal
        self.seal_hook: LockedWork | None = None
        #: the Merkle tree's frontier after this process's last commit: the next group
        #: uses it if no other process appended since (GroupState.load checks)
        self._tree: TreeTip | None = None

    async def start(self, *, own_thread: bool = True) -> None:
        """Start the committer's thread and loop, and the committer on it; or, without
        ``own_thread``, the committer on the caller's loop (the sequencer's process,
        where no request handler competes with it: a thread would only add the hops)."""
        if not own_thread:
            self._loop = asyncio.get_running_loop()
            await self._begin()
            return
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._thread = threading.Thread(target=self._serve_loop, args=(loop,),
                                        name="ledger-committer", daemon=True)
        self._thread.start()
        await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(self._begin(), loop))

    @staticmethod
    def _serve_loop(loop: asyncio.AbstractEventLoop) -> None:
        asyncio.set_event_loop(loop)
        try:
            loop.run_forever()
        finally:
            loop.close()

    async def _begin(self) -> None:
        """On the committer's loop: its queue and the committer task."""
        self._queue = asyncio.Queue()
        self._task = asyncio.create_task(self._run(), name="ledger-committer")

    @property
    def pending(self) -> int:
        """Envelopes queued for the committer or in the group it is committing."""
        return self._pending

    async def stop(self) -> None:
        """Stop the committer (a group in flight is rolled back and its callers hear
        UNAVAILABLE), its loop and its thread; whatever is still queued hears the same."""
        loop, thread, self._loop = self._loop, self._thread, None
        if loop is not None and thread is None:  # the committer runs on this loop
            await self._halt()
        elif loop is not None and thread is not None:
            with contextlib.suppress(RuntimeError):  # its loop already ended
                await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(self._halt(),
                                                                           loop))
                loop.call_soon_threadsafe(loop.stop)
            await asyncio.get_running_loop().run_in_executor(None, thread.join)
            self._thread = None
        while self._queue is not None and not self._queue.empty():
            answer(self._queue.get_nowait(), failure=shutting_down())

    async def _halt(self) -> None:
        """On the committer's loop: cancel the committer, close its connection."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        await self._drop_connection()

    @contextlib.contextmanager
    def admitting(self, n: int) -> Iterator[None]:
        """Hold room for ``n`` envelopes from the moment a request's body is read until
        it is answered, or refuse at once with ``UNAVAILABLE``.

        The bound ``config.max_pending`` covers the whole intake path, not only the
        committer's queue: when signature checks are the bottleneck, requests would
        otherwise pile up, bodies and all, in front of the verify threads without ever
        reaching the queue. Refusing before parse and verify also spends no CPU on work
        that will not be written."""
        if self._inflight + n > self.config.max_pending:
            raise BureauError(Code.UNAVAILABLE, "", "intake is full; retry later",
                              pushback=Pushback.INTAKE_FULL)
        self._inflight += n
        try:
            yield
        finally:
            self._inflight -= n

    async def submit(self, subs: Sequence[Submission]) -> list[Result]:
        """Judge and append ``subs`` in order, in one transaction; return once durable."""
        if not subs:
            return []
        if self._pending + len(subs) > self.config.max_pending:
            raise BureauError(Code.UNAVAILABLE, "", "intake queue is full; retry later",
                              pushback=Pushback.QUEUE_FULL)
        unit = Unit(subs, asyncio.get_running_loop().create_future())
        return await self._enqueue(unit)

    async def run_locked(self, work: Callable[[GroupTx], Awaitable[T]]) -> T:
        """Run ``work`` under the ledger lock, in a group transaction of its own kind;
        return what it returned, once that transaction has committed."""
        returned: list[T] = []

        async def locked(tx: GroupTx) -> None:
            returned.append(await work(tx))

        await self._enqueue(Unit((), asyncio.get_running_loop().create_future(), locked))
        return returned[-1]

    async def _enqueue(self, unit: Unit) -> list[Result]:
        loop, queue = self._loop, self._queue
        if loop is None or queue is None:
            raise shutting_down()
        self._count(len(unit.subs))
        try:
            loop.call_soon_threadsafe(queue.put_nowait, unit)
        except RuntimeError:  # the committer's loop has closed
            self._count(-len(unit.subs))
            raise shutting_down() from None
        # shield: a client that hangs up does not cancel a commit others wait for
        return await asyncio.shield(unit.future)

    def _count(self, n: int) -> None:
        with self._counting:
            self._pending += n
            metrics.INTAKE_QUEUE_DEPTH.set(self._pending)

    async def _run(self) -> None:
        queue = self._queue
        assert queue is not None
        while True:
            units = [await queue.get()]
            self._take_queued(units)
            try:
                await self._commit(units)
            except asyncio.CancelledError:
                for u in units:
                    answer(u, failure=shutting_down())
                raise
            finally:
                self._count(-sum(len(u.subs) for u in units))

    def _take_queued(self, units: list[Unit]) -> list[Unit]:
        """Move what is queued into the group ``units``, up to ``config.max_group``
        envelopes; returns the units it moved."""
        queue = self._queue
        assert queue is not None
        size, taken = sum(len(u.subs) for u in units), []
        while not queue.empty() and size < self.config.max_group:
            taken.append(queue.get_nowait())
            size += len(taken[-1].subs)
        units.extend(taken)
        return taken

    async def _connection(self) -> db.Connection:
        """The committer's own connection, kept between groups (a group commit is a
        handful of round trips in all), opened again after it was lost: to whichever
        host of a multi-host URL is read-write by then (after a failover, the new
        primary)."""
        conn = self._conn
        if conn is not None and not conn.is_closed():
            return conn
        self._conn = await self._link.connect(lambda: db.connect(
            self.database_url, command_timeout=60, application_name="bureau committer"))
        return self._conn

    async def _drop_connection(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                await conn.close(timeout=2)

    async def _in_transaction(self, body: Callable[[db.Connection], Awaitable[T]],
                              envelopes: Callable[[], int]) -> T:
        """Run ``body`` (judging ``envelopes()``) in one transaction that holds the
        ledger head's row lock; time the section under the lock (:class:`_LockSection`).

        BEGIN and the lock go in one round trip (the simple protocol takes both
        statements at once); ``body`` then reads the state in statements of its own,
        whose snapshots are taken after the lock is held, so they see every group
        committed before it, by any process."""
        with db.TxTimer("append_group") as timer:
            conn = await self._connection()
            try:
                await chain.begin_locked(conn)
                section = _LockSection()
                try:
                    done = await body(conn)
                    await chain.commit(conn)
                    section.close(envelopes())
                except BaseException:
                    with contextlib.suppress(Exception):
                        await asyncio.shield(chain.roll_back(conn))
                    raise
            except BaseException:
                await self._drop_connection()  # whatever state it is in, start afresh
                raise
            timer.outcome = "commit"
            return done

    async def _commit(self, units: list[Unit]) -> None:
        """Commit what ``units`` hold, and what queued up while the lock was awaited
        (it joins ``units``), and answer each of them."""
        def late() -> list[Item]:
            return items_of(self._take_queued(units))

        await self._commit_items(items_of(units), late)
        size = sum(len(unit.subs) for unit in units)
        metrics.COMMIT_GROUP_SIZE.observe(size)
        if self.sequencer:
            metrics.SEQUENCER_GROUP_SIZE.observe(size)
        for unit in units:
            if unit.failure is not None:
                answer(unit, failure=unit.failure)
            else:
                answer(unit, [r for r in unit.results if r is not None])

    async def _commit_items(self, items: list[Item],
                            late: Callable[[], list[Item]] | None = None) -> None:
        """One group transaction for ``items``, joined once the lock is held by the
        ``late`` ones (whatever queued up while the lock was awaited: when several
        processes take turns, that is what arrived during another's group); should the
        database refuse it (and not by going away), the same in two halves, in order,
        until what it refuses is alone (see the module docstring)."""
        async def judge(conn: db.Connection) -> tuple[GroupTx, list[Result | None]]:
            if late is not None:
                items.extend(late())
            return await self._judge_group(conn, items)

        try:
            tx, results = await self._in_transaction(judge, lambda: sum(
                i != WORK for _, i in items))
        except Exception as exc:
            if db.is_connection_error(exc):
                # said once an outage (the link); each group's failure only at debug
                self._link.lost(exc)
                log.debug("database unreachable during group commit: %s", exc)
                self._fail(items, BureauError(
                    Code.UNAVAILABLE, "", "database unreachable; nothing was written; retry "
                    "later", pushback=Pushback.DATABASE_UNREACHABLE))
            elif len(items) == 1:
                self._isolate(items[0], exc)
            else:
                metrics.GROUP_SPLITS_TOTAL.inc()
                log.warning("the database refused a group of %d; committing it in halves "
                            "to find what it cannot store: %r", len(items), exc)
                half = len(items) // 2
                await self._commit_items(items[:half])
                await self._commit_items(items[half:])
            return
        self._tree = tx.state.tree
        metrics.LEDGER_HEAD_SEQ.set(tx.seq)
        counts: Counter[tuple[str, str]] = Counter()
        for (unit, i), result in zip(items, results, strict=True):
            if result is not None:
                unit.results[i] = result
                counts[(unit.subs[i].envelope.name, result.status)] += 1
        for (name, status), n in counts.items():
            metrics.INTAKE_TOTAL.labels(payload_type=name, result=status).inc(n)

    async def _judge_group(self, conn: db.Connection, items: list[Item],
                           ) -> tuple[GroupTx, list[Result | None]]:
        """Under the head lock (see _in_transaction): load the state, the head included,
        in one statement; judge and append each item in order; write the group."""
        subs = [unit.subs[i] for unit, i in items if i != WORK]
        state = await GroupState.load(conn, subs, self._tree)
        head = state.head
        assert head is not None
        now = self.clock()
        last = head.recorded_at
        recorded_at = now if last is None or now > last else last
        tx = GroupTx(conn, state, head, recorded_at, self.config.epoch_seconds)
        results: list[Result | None] = []
        for unit, i in items:
            if i == WORK:
                assert unit.work is not None
                await unit.work(tx)
                results.append(None)
            else:
                results.append(judge_one(tx, unit.subs[i], now))
        if tx.seal_requested and self.seal_hook is not None:
            await self.seal_hook(tx)
        await flush(tx)
        return tx, results

    def _fail(self, items: list[Item], err: BureauError) -> None:
        """Nothing of ``items`` was written: each of their units hears ``err``."""
        for unit, _ in items:
            unit.failure = err

    def _isolate(self, item: Item, exc: Exception) -> None:
        """The database refused a group holding only ``item``: refuse it alone."""
        unit, i = item
        metrics.ISOLATED_TOTAL.inc()
        if i == WORK:
            log.error("locked work failed on its own; nothing of it was written",
                      exc_info=exc)
            self._fail([item], BureauError(Code.UNAVAILABLE, "", "internal error; nothing "
                                           "was written", pushback=Pushback.INTERNAL_ERROR))
            return
        env = unit.subs[i].envelope
        log.error("a group holding only this submission failed, so it is refused alone "
                  "(500): %s from %s, content key %s", env.name, env.keyid, env.content_key,
                  exc_info=exc)
        metrics.INTAKE_TOTAL.labels(payload_type=env.name, result="rejected").inc()
        unit.results[i] = Result("rejected", error=BureauError(
            Code.UNAVAILABLE, "", "internal error: the bureau could not store this "
            "submission; nothing of it was written, and nothing else was refused with it",
            pushback=Pushback.INTERNAL_ERROR))
