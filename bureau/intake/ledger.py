"""Stage 6 of intake: the append-only, hash-chained ledger, written by group commit.

Every request hands its verified submissions to :meth:`Ledger.submit` and waits. One
committer task per process takes everything queued, opens one transaction, locks the
single ``ledger_head`` row (which serialises writers across *all* bureau processes on the
database), judges each submission against the state under that lock, appends the
admitted ones with contiguous seqs, and commits. Only then are the waiting requests
answered: an acknowledgement is always durable. If anything fails before ``COMMIT``
returns, nothing of the group was written and every waiting request hears
``UNAVAILABLE``; a client re-sending the same envelopes gets ``duplicate`` for whatever
did commit, because duplicates are recognised by content.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import asyncpg

from bureau import db, metrics
from bureau.config import Config
from bureau.errors import BureauError, Code, Pushback
from bureau.intake import rules
from bureau.intake.index import record_admitted, record_exclusion
from bureau.intake.state import GroupState, Submission
from bureau.intake.writes import Writes, write_group
from bureau.kinds import EXCLUSION, SEAL_REQUEST, SUBMITTED
from bureau.transparency.tree import TreeTip, load_tip, pack_nodes
from reporters import wire
from reporters.tlog.merkle import entry_leaf_hash

log = logging.getLogger(__name__)

Clock = Callable[[], dt.datetime]


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def format_timestamp(t: dt.datetime) -> str:
    """RFC 3339, UTC, microseconds, ``Z`` — the form written into every entry."""
    return t.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def epoch_of(t: dt.datetime, epoch_seconds: int) -> int:
    micros = (t - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)) // dt.timedelta(microseconds=1)
    return micros // (epoch_seconds * 1_000_000)


@dataclass(frozen=True, slots=True)
class Result:
    """What intake answers for one envelope."""

    status: Literal["accepted", "duplicate", "rejected"]
    id: str | None = None
    seq: int | None = None
    error: BureauError | None = None

    def as_body(self) -> dict[str, Any]:
        if self.error is not None:
            return self.error.as_body()
        return {"status": self.status, "id": self.id, "seq": self.seq}


class GroupTx:
    """One group commit in progress: the head, the clock reading, the state, the writes."""

    def __init__(self, conn: asyncpg.Connection, state: GroupState, seq: int, head: str,
                 recorded_at: dt.datetime, epoch_seconds: int) -> None:
        self.conn = conn
        self.state = state
        self.seq = seq
        self.head = head
        self.recorded_at = recorded_at
        self.recorded_text = format_timestamp(recorded_at)
        self.epoch = epoch_of(recorded_at, epoch_seconds)
        state.epoch = self.epoch  # the rules ask which epoch the group records into
        self.writes = Writes()
        #: an admin ``seal`` was admitted in this group (see ``Ledger.seal_hook``)
        self.seal_requested = False

    def append(self, kind: str, *, envelope: bytes | None = None,
               body: dict[str, Any] | None = None, signer: str | None = None,
               subject: str | None = None, content_key: str | None = None) -> tuple[str, int]:
        """Chain one entry after the head; returns its id and seq. ``envelope`` is the
        canonical JSON of the envelope as submitted; ``body`` what the bureau writes."""
        seq = self.seq + 1
        if envelope is not None:
            raw = wire.envelope_entry_bytes(seq, self.head, kind, self.recorded_text,
                                            self.epoch, envelope)
        else:
            assert body is not None
            raw = wire.canonical_json({"seq": seq, "prev": self.head, "kind": kind,
                                       "recorded_at": self.recorded_text, "epoch": self.epoch,
                                       "body": body})
        entry_id = wire.blake3_hex(raw)
        self.writes.entries.append((seq, entry_id, self.head, kind, self.recorded_at,
                                    self.epoch, signer, subject, content_key, raw))
        self.seq, self.head = seq, entry_id
        return entry_id, seq


# --------------------------------------------------------------------------- judging


def _append_exclusion(tx: GroupTx, target: str, reason: str, cause: str) -> None:
    target_rec = tx.state.entry(target) if target in tx.state.entries else None
    _, seq = tx.append(
        EXCLUSION.name, body={"entry": target, "reason": reason, "cause": cause},
        subject=target_rec.subject if target_rec else None)
    record_exclusion(tx.state, tx.writes, target, seq, reason)


def _is_known_party(st: GroupState, key: str) -> bool:
    return st.is_admin(key) or st.reporters.get(key) is not None \
        or st.agents.get(key) is not None


def judge_one(tx: GroupTx, sub: Submission, now: dt.datetime) -> Result:
    """Judge one submission under the lock and append it if admitted."""
    env, st, signer, key = sub.envelope, tx.state, sub.signer, sub.envelope.content_key
    seen = st.admitted.get(key)
    if seen is not None:
        return Result("duplicate", seen[0], seen[1])
    kind = SUBMITTED[env.name]
    try:
        if sub.refusal is not None:
            raise sub.refusal
        payload = sub.payload
        assert payload is not None
        rules.authorize(kind, signer, st)
        decision = rules.admit(payload, signer, key, now, st)
    except BureauError as err:
        if _is_known_party(st, signer):
            tx.writes.refusals.append((
                key, signer, env.name, err.code.value, err.path, err.detail,
                tx.recorded_at, env.canonical))
        return Result("rejected", error=err)
    tx.seal_requested |= kind is SEAL_REQUEST
    subject = None if kind.subject is None else kind.subject(payload, signer)
    entry_id, seq = tx.append(kind.name, envelope=env.canonical, signer=signer,
                              content_key=key, subject=subject)
    record_admitted(st, tx.writes, kind, payload, signer, key, subject, entry_id, seq)
    for target, reason in decision.exclusions:
        _append_exclusion(tx, target, reason, entry_id)
    return Result("accepted", entry_id, seq)


async def flush(tx: GroupTx) -> None:
    """Write the group's rows, the Merkle tree nodes its entries complete, and move the
    head (one statement, see bureau.intake.writes). Every entry appended, whoever
    appended it (a submission, an exclusion, a seal), extends the tree here."""
    if tx.writes.entries:
        # The committer loaded the frontier with the head; a tool chaining entries
        # itself (genesis, benches) reads it now: the head row has not moved yet.
        tip = tx.state.tree or await load_tip(tx.conn)
        assert tip.size == tx.writes.entries[0][0] - 1, "the tree is not at the head"
        frontier, nodes = tip.frontier.extend(
            entry_leaf_hash(row[1]) for row in tx.writes.entries)
        tx.writes.tree = pack_nodes(nodes)
        tx.state.tree = TreeTip(tx.head, frontier)
    await write_group(tx.conn, tx.writes, tx.seq, tx.head, tx.recorded_at)


# --------------------------------------------------------------------------- committer

#: Extra work done under the ledger lock after a group's submissions (e.g. sealing).
LockedWork = Callable[[GroupTx], Awaitable[None]]
T = TypeVar("T")


@dataclass
class _Unit:
    subs: Sequence[Submission]
    future: asyncio.Future[list[Result]]
    work: LockedWork | None = None


class Ledger:
    """The single writer path of a bureau process."""

    def __init__(self, pool: asyncpg.Pool, config: Config, clock: Clock = utcnow) -> None:
        self.pool = pool
        self.config = config
        self.clock = clock
        self._queue: asyncio.Queue[_Unit] = asyncio.Queue()
        self._pending = 0
        #: envelopes of requests past their body read and not yet answered (see
        #: :meth:`admitting`); always at least ``_pending``
        self._inflight = 0
        self._task: asyncio.Task[None] | None = None
        self._conn: asyncpg.Connection | None = None  # the committer's, see _connection
        #: run under the lock, before the flush, in a group that admitted an admin
        #: ``seal`` (SPEC §3: it closes every elapsed epoch); set by bureau.views.settle
        self.seal_hook: LockedWork | None = None
        #: the Merkle tree's frontier after this process's last commit: the next group
        #: uses it if no other process appended since (GroupState.load checks)
        self._tree: TreeTip | None = None

    async def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="ledger-committer")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        await self._drop_connection()
        while not self._queue.empty():
            unit = self._queue.get_nowait()
            if not unit.future.done():
                unit.future.set_exception(BureauError(
                    Code.UNAVAILABLE, "", "the bureau is shutting down",
                    pushback=Pushback.SHUTTING_DOWN))

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
        unit = _Unit(subs, asyncio.get_running_loop().create_future())
        return await self._enqueue(unit)

    async def run_locked(self, work: Callable[[GroupTx], Awaitable[T]]) -> T:
        """Run ``work`` under the ledger lock, in a group transaction of its own kind;
        return what it returned, once that transaction has committed."""
        returned: list[T] = []

        async def locked(tx: GroupTx) -> None:
            returned.append(await work(tx))

        await self._enqueue(_Unit((), asyncio.get_running_loop().create_future(), locked))
        return returned[-1]

    async def _enqueue(self, unit: _Unit) -> list[Result]:
        self._pending += len(unit.subs)
        metrics.INTAKE_QUEUE_DEPTH.set(self._pending)
        self._queue.put_nowait(unit)
        # shield: a client that hangs up does not cancel a commit others wait for
        return await asyncio.shield(unit.future)

    async def _run(self) -> None:
        while True:
            units = [await self._queue.get()]
            size = len(units[0].subs)
            while not self._queue.empty() and size < self.config.max_group:
                units.append(self._queue.get_nowait())
                size += len(units[-1].subs)
            try:
                await self._commit(units)
            except asyncio.CancelledError:
                for u in units:
                    if not u.future.done():
                        u.future.set_exception(BureauError(
                            Code.UNAVAILABLE, "", "the bureau is shutting down",
                            pushback=Pushback.SHUTTING_DOWN))
                raise
            finally:
                self._pending -= size
                metrics.INTAKE_QUEUE_DEPTH.set(self._pending)

    async def _connection(self) -> asyncpg.Connection:
        """The committer's own connection, kept between groups: a pool's release costs
        a reset round trip, and a group commit is a handful of round trips in all."""
        conn = self._conn
        if conn is not None:
            try:
                if not conn.is_closed():
                    return conn
            except asyncpg.InterfaceError:
                pass  # the pool took it back when the connection was lost
            self._conn = None
        self._conn = await self.pool.acquire()
        return self._conn

    async def _drop_connection(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                await self.pool.release(conn, timeout=2)

    async def _in_transaction(self, body: Callable[[asyncpg.Connection], Awaitable[GroupTx]],
                              ) -> GroupTx:
        """Run ``body`` in one transaction that holds the ledger head's row lock.

        BEGIN and the lock go in one round trip (the simple protocol takes both
        statements at once); ``body`` then reads the state in statements of its own,
        whose snapshots are taken after the lock is held, so they see every group
        committed before it, by any process."""
        with db.TxTimer("append_group") as timer:
            conn = await self._connection()
            try:
                await conn.execute("BEGIN ISOLATION LEVEL READ COMMITTED;"
                                   " SELECT 1 FROM ledger_head FOR UPDATE")
                try:
                    tx = await body(conn)
                    await conn.execute("COMMIT")
                except BaseException:
                    with contextlib.suppress(Exception):
                        await asyncio.shield(conn.execute("ROLLBACK"))
                    raise
            except BaseException:
                await self._drop_connection()  # whatever state it is in, start afresh
                raise
            timer.outcome = "commit"
            return tx

    async def _commit(self, units: list[_Unit]) -> None:
        subs = [s for u in units for s in u.subs]
        metrics.COMMIT_GROUP_SIZE.observe(len(subs))
        results: list[list[Result]] = []

        async def body(conn: asyncpg.Connection) -> GroupTx:
            # The head row is locked (see _in_transaction); the state, head included,
            # is read after the lock, in one statement.
            state = await GroupState.load(conn, subs, self.config.admin_keys, self._tree)
            head = state.head
            assert head is not None
            now = self.clock()
            last = head.recorded_at
            recorded_at = now if last is None or now > last else last
            tx = GroupTx(conn, state, head.seq, head.head, recorded_at,
                         self.config.epoch_seconds)
            results.clear()
            for unit in units:
                results.append([judge_one(tx, s, now) for s in unit.subs])
                if unit.work is not None:
                    await unit.work(tx)
            if tx.seal_requested and self.seal_hook is not None:
                await self.seal_hook(tx)
            await flush(tx)
            return tx

        try:
            tx = await self._in_transaction(body)
        except Exception as exc:
            if db.is_connection_error(exc):
                log.warning("database unreachable during group commit: %s", exc)
                err = BureauError(Code.UNAVAILABLE, "", "database unreachable; nothing was "
                                  "written; retry later", pushback=Pushback.DATABASE_UNREACHABLE)
            else:
                log.exception("group commit failed")
                err = BureauError(Code.UNAVAILABLE, "", "internal error; nothing was written",
                                  pushback=Pushback.INTERNAL_ERROR)
            for u in units:
                if not u.future.done():
                    u.future.set_exception(err)
            return
        self._tree = tx.state.tree
        metrics.LEDGER_HEAD_SEQ.set(tx.seq)
        counts = Counter((sub.envelope.name, r.status)
                         for unit, res in zip(units, results, strict=True)
                         for sub, r in zip(unit.subs, res, strict=True))
        for (name, status), n in counts.items():
            metrics.INTAKE_TOTAL.labels(payload_type=name, result=status).inc(n)
        for unit, res in zip(units, results, strict=True):
            if not unit.future.done():
                unit.future.set_result(res)
