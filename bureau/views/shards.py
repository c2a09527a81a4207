"""Report derivation spread over worker processes, each holding a shard of the agents.

One Python process scores one core's worth. Everything a report says is a function of
the entries about its agent, except evaluator weights, which are sums over every agent
an evaluator attested (:class:`bureau.scoring.evaluators.EvaluatorBook`). So the agents are split
by their key (``SHARD_OF_ENTRY`` in :mod:`bureau.storage.entries`, computed by PostgreSQL on
the ``subject`` column), and each worker process:

1. **advance** — reads the new entries about its agents on its own connection, applies
   them and re-resolves what changed (:meth:`~bureau.views.derive.Deriver.reweigh_local`),
   then sends back its part of the sums of every evaluator whose sums moved;
2. **sign** — takes every evaluator whose (weight, offset) changed anywhere, which this
   process works out from all the parts, re-scores its agents
   (:meth:`~bureau.views.derive.Deriver.finish`), signs its reports and inserts them itself
   (or returns them). Reports are read only for epochs that have a checkpoint, which
   this process writes once every worker is done.

The bytes are those of one :class:`~bureau.views.derive.Deriver` over every agent;
``tests/views/test_derive_equivalence.py`` holds the split equal to the reference,
and ``tests/views/test_report_shards.py`` the processes equal to one process.

Workers live as long as the builder; if one dies, the builder fails the epoch, the
sealer resets it (which stops the others) and the next pass starts fresh workers from
the entries. A worker exits when its pipe closes, so it never outlives this process.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing
import signal
import time
import traceback
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

import nacl.signing

from bureau.errors import InternalError
from bureau.scoring.book import EvaluatorBook
from bureau.scoring.evaluators import Weighing
from bureau.scoring.policy import policy_by_hash
from bureau.storage import db, locks
from bureau.storage.epochs import store_reports
from bureau.storage.reports import Seal
from bureau.views.cards import sign_statements
from bureau.views.derive import Deriver, feed, long_lived_objects
from bureau.views.sign import REPORT_TYPE, sign_many

log = logging.getLogger(__name__)

# spawn, not fork: the parent runs threads (the event loop's executors, asyncpg), and a
# forked child would inherit their locks in whatever state they were in.
_CONTEXT = multiprocessing.get_context("spawn")
_STOP_TIMEOUT = 5.0


# ----------------------------------------------------------------- the pipe's messages


@dataclass(frozen=True, slots=True)
class Advance:
    """To a worker: read, apply and re-resolve the entries of its shard up to ``upto``;
    it answers with its part of the sums of every evaluator whose sums moved."""

    upto: int


@dataclass(frozen=True, slots=True)
class Sign:
    """To a worker: take the evaluators whose weighing ``changed`` anywhere, re-score its
    agents, sign their reports of ``epoch`` (sealed at ``upto``, id ``head``) and insert
    them (``store``: it answers how many) or send them back ((agent, envelope) pairs)."""

    changed: dict[str, Weighing | None]
    epoch: int
    upto: int
    head: str
    store: bool


@dataclass(frozen=True, slots=True)
class Stop:
    """To a worker: exit."""


Request = Advance | Sign | Stop


@dataclass(frozen=True, slots=True)
class Done:
    """From a worker: the answer to a request, and the seconds its two phases took."""

    value: Any
    phases: tuple[float, float]


@dataclass(frozen=True, slots=True)
class Unreachable:
    """From a worker: it lost the database (its error, said)."""

    detail: str


@dataclass(frozen=True, slots=True)
class Failed:
    """From a worker: the request failed (its traceback)."""

    traceback: str


Reply = Done | Unreachable | Failed


class ShardFailed(InternalError):
    """A worker process failed or died; the builder's state is no longer trusted."""


class ShardUnreachable(ShardFailed, ConnectionError):
    """A worker could not reach the database: a connection error to the sealer (it
    logs "database unreachable", and the next pass starts workers afresh)."""


class ShardPool:
    """``shards`` worker processes that derive and sign reports together."""

    def __init__(self, dsn: str, shards: int, signing_key: nacl.signing.SigningKey) -> None:
        if shards < 2:
            raise ValueError("a shard pool has at least two shards")
        self.dsn = dsn
        self.shards = shards
        self._seed = bytes(signing_key)
        self._workers: list[tuple[BaseProcess, Connection]] = []
        #: the seq every worker's deriver has reached, and the policy (hash) they
        #: derive under; workers start again from entry 1 when it changes
        self.seq = 0
        self.policy: str | None = None
        self._book: EvaluatorBook | None = None

    def pids(self) -> list[int]:
        """The worker processes' ids (none before the first epoch is built)."""
        return [proc.pid for proc, _ in self._workers if proc.pid is not None]

    def _start(self, policy: str) -> None:
        if self._workers:
            return
        self.policy = policy
        self._book = EvaluatorBook(policy_by_hash(policy)[0])
        for i in range(self.shards):
            mine, theirs = _CONTEXT.Pipe()
            spec = WorkerSpec(self.dsn, (i, self.shards), self._seed, policy)
            proc = _CONTEXT.Process(target=_worker_main, name=f"bureau-reports-{i}",
                                    args=(theirs, spec), daemon=True)
            proc.start()
            theirs.close()
            self._workers.append((proc, mine))
        log.info("started %d report worker processes", self.shards)

    async def _ask(self, message: Request) -> list[Done]:
        """Send ``message`` to every worker; their replies, in shard order."""
        for proc, pipe in self._workers:
            try:
                pipe.send(message)
            except OSError as exc:  # its end of the pipe is closed: the process is gone
                raise ShardFailed(f"report worker {proc.name} died (exit code "
                                  f"{proc.exitcode}; {exc})") from exc
        # Every reply is awaited, even after a failure: no thread is left reading a
        # pipe that reset() is about to close.
        replies = await asyncio.gather(
            *(asyncio.to_thread(_reply, proc, pipe) for proc, pipe in self._workers),
            return_exceptions=True)
        done: list[Done] = []
        for reply in replies:
            if isinstance(reply, BaseException):
                raise reply
            done.append(reply)
        return done

    async def sign_epoch(self, seal: Seal, policy: str) -> tuple[list[str], list[bytes]]:
        """Every agent's signed report of the sealed epoch under ``policy`` (its hash),
        sorted by agent."""
        signed = await self._run(seal, policy, store=False)
        merged = sorted(pair for part in signed for pair in part)
        return [a for a, _ in merged], [e for _, e in merged]

    async def store_epoch(self, seal: Seal, policy: str) -> int:
        """Have every worker sign its agents' reports of the sealed epoch and insert them
        itself (none of them is visible before the caller writes the epoch's
        checkpoint); return how many reports the epoch has."""
        return sum(await self._run(seal, policy, store=True))

    async def _run(self, seal: Seal, policy: str, *, store: bool) -> list[Any]:
        upto, epoch = seal.last_seq, seal.epoch
        if self.seq > upto or (self.policy is not None and self.policy != policy):
            # epochs are built in order, each under its policy: an older epoch or
            # another policy means starting over from entry 1
            self.reset()
        self._start(policy)
        assert self._book is not None
        t0 = time.perf_counter()
        advanced = await self._ask(Advance(upto=upto))
        t1 = time.perf_counter()
        changed = self._book.update((i, done.value) for i, done in enumerate(advanced))
        t2 = time.perf_counter()
        signed = await self._ask(Sign(changed=changed, epoch=epoch, upto=upto,
                                      head=seal.head, store=store))
        t3 = time.perf_counter()
        self.seq = upto
        log.info("epoch %d: read and resolve %.2f s (workers: %s), evaluators %.2f s, "
                 "score and sign%s %.2f s (workers: %s), %d evaluators moved", epoch,
                 t1 - t0, _phases(advanced), t2 - t1, " and store" if store else "",
                 t3 - t2, _phases(signed), len(changed))
        return [done.value for done in signed]

    @property
    def book(self) -> EvaluatorBook:
        """Every evaluator's record as of the last epoch built, summed over the shards."""
        assert self._book is not None, "no epoch has been built yet"
        return self._book

    def reset(self) -> None:
        """Stop the workers and forget everything: the next epoch starts from entry 1."""
        self.close()
        self._book = None
        self.policy = None
        self.seq = 0

    def close(self) -> None:
        workers, self._workers = self._workers, []
        for _, pipe in workers:
            with contextlib.suppress(OSError):
                pipe.send(Stop())
            pipe.close()
        for proc, _ in workers:
            proc.join(_STOP_TIMEOUT)
            if proc.is_alive():
                proc.kill()
                proc.join()


def _phases(replies: list[Done]) -> str:
    return ", ".join(f"{a:.2f} + {b:.2f}" for a, b in (r.phases for r in replies))


def _reply(proc: BaseProcess, pipe: Connection) -> Done:
    try:
        reply: Reply = pipe.recv()
    except (EOFError, OSError) as exc:
        raise ShardFailed(f"report worker {proc.name} died (exit code "
                          f"{proc.exitcode})") from exc
    if isinstance(reply, Unreachable):
        raise ShardUnreachable(f"report worker {proc.name} lost the database: "
                               f"{reply.detail}")
    if isinstance(reply, Failed):
        raise ShardFailed(f"report worker {proc.name} failed:\n{reply.traceback}")
    return reply


# --------------------------------------------------------------------------- worker


@dataclass(frozen=True, slots=True)
class WorkerSpec:
    """What a worker process starts from (sent to it pickled): the database it reads,
    its shard ``(i, n)`` of the agents, the bureau key's seed, and the hash of the
    policy it derives under."""

    dsn: str
    shard: tuple[int, int]
    seed: bytes
    policy: str


def _worker_main(pipe: Connection, spec: WorkerSpec) -> None:
    # Ctrl-C reaches the whole process group; the parent decides when workers stop.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # A spawned process has no logging of its own: lines like the service's, on the
    # standard error it shares with it.
    logging.basicConfig(level=logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    asyncio.run(_serve(pipe, spec))


async def _connected(conn: db.Connection | None, dsn: str,
                     link: db.Link) -> db.Connection:
    """The worker's connection, checked before each message (a worker idles between
    seals, and its server may have gone meanwhile: a failover), or a new one. The
    deriver's state does not depend on the connection, and a message that fails half
    way is never resumed (the parent starts over), so reconnecting between messages
    loses nothing."""
    if conn is not None:
        try:
            await locks.ping(conn)
            return conn
        except Exception as exc:
            # Nothing about data can fail this: whatever it says (a connection whose
            # server vanished while this process was blocked on its pipe may answer
            # with a protocol error rather than a closed connection), it is gone.
            link.lost(exc)
            conn.terminate()
    return await link.connect(lambda: db.connect(dsn))


async def _serve(pipe: Connection, spec: WorkerSpec) -> None:
    key = nacl.signing.SigningKey(spec.seed)
    deriver = Deriver(policy_by_hash(spec.policy)[0], spec.policy)
    link = db.Link(f"report worker {spec.shard[0]}")
    conn: db.Connection | None = None
    try:
        while True:
            try:
                message: Request = pipe.recv()  # blocking: nothing else to do
            except EOFError:
                return  # the parent is gone
            try:
                if isinstance(message, Stop):
                    return
                conn = await _connected(conn, spec.dsn, link)
                t0 = time.perf_counter()
                value: Any
                if isinstance(message, Advance):
                    await feed(conn, deriver, message.upto, shard=spec.shard)
                    t1 = time.perf_counter()
                    with long_lived_objects():
                        value = deriver.reweigh_local()
                else:
                    with long_lived_objects():
                        deriver.finish(message.changed)
                    t1 = time.perf_counter()
                    agents, bodies = [], []
                    for agent, body in deriver.payloads(message.epoch, message.upto,
                                                        message.head):
                        agents.append(agent)
                        bodies.append(body)
                    envelopes = sign_many(key, REPORT_TYPE, bodies)
                    if message.store:
                        cards = sign_statements(key, bodies)
                        await store_reports(conn, message.epoch, agents, envelopes, cards)
                        value = len(agents)
                    else:
                        value = list(zip(agents, envelopes, strict=True))
                reply: Reply = Done(value=value, phases=(t1 - t0, time.perf_counter() - t1))
            except Exception as exc:
                if db.is_connection_error(exc):
                    pipe.send(Unreachable(detail=str(exc) or type(exc).__name__))
                else:
                    pipe.send(Failed(traceback=traceback.format_exc()))
                return
            pipe.send(reply)
    finally:
        if conn is not None:
            with contextlib.suppress(Exception):  # it may be gone with its server
                await conn.close(timeout=2)
