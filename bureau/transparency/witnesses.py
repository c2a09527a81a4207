"""Witnesses (SPEC §8.1, C2SP tlog-witness): each new tree head goes to every witness of
``BUREAU_WITNESSES``, with the consistency proof from the size the witness last
cosigned, and the cosignatures that come back are kept per head and served with it.

One :class:`WitnessPusher` per witness, each a task of its own that takes the latest
head it was offered (:meth:`WitnessPusher.offer`): a slow or unreachable witness never
holds up publication, nor the other witnesses. What the pusher knows of a witness's size
it learns from the cosignatures kept (``cosignatures``, so a new leader starts where the
last one stopped) and from the witness's ``409`` answers
(:func:`reporters.tlog.witness.push_checkpoint` retries once from the size a ``409``
names). A ``422``, a witness that names a size larger than any head published, or one
that cosigned another root at a size we published (its answer's cosignature is not over
our checkpoint, and the checkpoint it serves carries its valid cosignature over another
root), is a conflict: logged with both roots and counted in
``bureau_witness_conflicts_total`` (which ops/alerts.yml alerts on); anything else that
goes wrong is counted in ``bureau_witness_failures_total`` and tried again at the next tick.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging

import aiohttp

from bureau import metrics
from bureau.storage import db
from bureau.storage import heads as head_rows
from bureau.transparency.heads import Head, latest_size
from bureau.transparency.tree import consistency_proof, root_at
from reporters._internal.capped import TooLarge, read_capped
from reporters.tlog.checkpoint import Checkpoint
from reporters.tlog.errors import TlogError
from reporters.tlog.note import open_note
from reporters.tlog.witness import (
    Cosigned,
    Offer,
    Refused,
    SizeMismatch,
    Witness,
    push_checkpoint,
)

log = logging.getLogger(__name__)

#: the most of a witness's cosigned checkpoint read back (a note with a few signatures)
MAX_WITNESS_NOTE = 16 * 1024


async def cosigned_size(conn: db.Connection, witness: Witness) -> int:
    """The largest head this witness cosigned, as far as this bureau kept (0: none)."""
    return await head_rows.cosigned_size(conn, witness.verifier.vkey)


async def keep_cosignature(conn: db.Connection, witness: Witness, size: int,
                           cosigned: Cosigned) -> None:
    await head_rows.keep_cosignature(conn, size, witness.verifier.vkey, cosigned.lines,
                                     cosigned.cosignature.timestamp)


class WitnessPusher:
    """Pushes the latest head it is offered to one witness."""

    def __init__(self, witness: Witness, pool: db.Pool, session: aiohttp.ClientSession,
                 origin: str, *, timeout: float = 10.0) -> None:
        self.witness = witness
        self.pool = pool
        self.session = session
        self.origin = origin
        self.timeout = timeout
        #: the size the witness is believed to have cosigned; None until read from the DB
        self.known: int | None = None
        #: a head the witness refused as a conflict is not sent again
        self._refused: int | None = None
        self._next: Head | None = None
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @property
    def name(self) -> str:
        return self.witness.name

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"witness {self.name}")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    def offer(self, head: Head) -> None:
        """Send ``head`` when this pusher is free (a newer offer replaces an older one)."""
        self._next = head
        self._wake.set()

    def forget(self) -> None:
        """Leadership moved away: what this process knew of the witness may be stale."""
        self.known = None

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            head, self._next = self._next, None
            if head is None:
                continue
            try:
                await self.push(head)
            except asyncio.CancelledError:
                raise
            except (aiohttp.ClientError, TimeoutError, OSError) as exc:
                metrics.WITNESS_FAILURES.labels(witness=self.name).inc()
                log.warning("witness %s: unreachable: %r", self.name, exc)
            except TlogError as exc:
                metrics.WITNESS_FAILURES.labels(witness=self.name).inc()
                log.warning("witness %s: %s", self.name, exc)
            except Exception as exc:
                metrics.WITNESS_FAILURES.labels(witness=self.name).inc()
                if db.is_connection_error(exc):
                    log.warning("witness %s: database unreachable: %s", self.name, exc)
                else:
                    log.exception("witness %s: push failed", self.name)

    async def push(self, head: Head) -> None:
        """One push of ``head``, and what the answer means."""
        if self.known is None:
            async with self.pool.acquire() as conn:
                self.known = await cosigned_size(conn, self.witness)
        if head.size <= self.known or head.size == self._refused:
            return
        checkpoint = Checkpoint(self.origin, head.size, head.root)

        async def proof_from(old: int) -> list[bytes]:
            async with self.pool.acquire() as conn:
                return await consistency_proof(conn, old, head.size)

        try:
            answer = await push_checkpoint(self.session,
                                           Offer(self.witness, checkpoint, head.note),
                                           self.known, proof_from, timeout=self.timeout)
        except TlogError as exc:
            # A cosignature line by the witness's key that is not over our checkpoint:
            # if the witness cosigned another root at a size we published, a fork.
            if exc.code != "BAD_SIGNATURE" or not await self._cosigned_another_root(head):
                raise
            return
        if isinstance(answer, Cosigned):
            async with self.pool.acquire() as conn:
                await keep_cosignature(conn, self.witness, head.size, answer)
            self.known = head.size
            metrics.WITNESS_COSIGNATURES.labels(witness=self.name).inc()
            log.info("witness %s cosigned size %d", self.name, head.size)
        elif isinstance(answer, SizeMismatch):
            async with self.pool.acquire() as conn:
                published = await latest_size(conn) or 0
            if answer.size > published:
                self._conflict(head, f"it has cosigned size {answer.size}, larger than any "
                                     f"head published ({published})")
            else:
                self.known = answer.size
                metrics.WITNESS_FAILURES.labels(witness=self.name).inc()
                log.warning("witness %s: at size %d, not %d; sent again at the next tick",
                            self.name, answer.size, head.size)
        elif isinstance(answer, Refused) and answer.conflict:
            self._conflict(head, answer.detail)
        else:
            assert isinstance(answer, Refused)
            metrics.WITNESS_FAILURES.labels(witness=self.name).inc()
            log.warning("witness %s refused size %d: %d %s", self.name, head.size,
                        answer.status, answer.detail)

    async def _cosigned_another_root(self, head: Head) -> bool:
        """After an answer whose cosignature is not over ``head``: the checkpoint the
        witness says it last cosigned (``GET <url>/<hex SHA-256 of the origin>/checkpoint``).
        If it carries a valid cosignature by this witness over a root that differs from
        ours at that size (one we published), that is a conflict (SPEC §8.1): counted,
        logged with both roots, and True."""
        url = (self.witness.url.rstrip("/") + "/"
               + hashlib.sha256(self.origin.encode()).hexdigest() + "/checkpoint")
        try:
            async with self.session.get(url, timeout=aiohttp.ClientTimeout(
                    total=self.timeout)) as resp:
                if resp.status != 200:
                    return False
                # the whole note (``content.read(n)`` returns what has arrived so far)
                body = await read_capped(resp, MAX_WITNESS_NOTE)
            opened = open_note(body, [self.witness.verifier])
            theirs = Checkpoint.parse(opened.text)
        except (aiohttp.ClientError, TimeoutError, TlogError, UnicodeDecodeError, TooLarge):
            return False
        if theirs.origin != self.origin:
            return False
        async with self.pool.acquire() as conn:
            published = await latest_size(conn) or 0
            ours = (await root_at(conn, theirs.size)) if theirs.size <= published else None
        if ours is None or ours == theirs.root:
            return False
        self._conflict(head, f"it cosigned size {theirs.size} with root {theirs.root.hex()}, "
                             f"where this ledger's root is {ours.hex()}")
        return True

    def _conflict(self, head: Head, why: str) -> None:
        self._refused = head.size
        metrics.WITNESS_CONFLICTS.labels(witness=self.name).inc()
        log.error("WITNESS CONFLICT: %s refused the tree head of size %d (root %s): %s. "
                  "The log may have forked; see docs/runbook.md#witness-conflict",
                  self.name, head.size, head.root.hex(), why)


class Witnesses:
    """Every witness's pusher, sharing one HTTP session."""

    def __init__(self, witnesses: tuple[Witness, ...], pool: db.Pool, origin: str) -> None:
        self._specs = witnesses
        self.pool = pool
        self.origin = origin
        self.pushers: list[WitnessPusher] = []
        self._session: aiohttp.ClientSession | None = None

    async def start(self) -> None:
        if not self._specs:
            return
        self._session = aiohttp.ClientSession()
        self.pushers = [WitnessPusher(w, self.pool, self._session, self.origin)
                        for w in self._specs]
        for pusher in self.pushers:
            pusher.start()

    async def stop(self) -> None:
        for pusher in self.pushers:
            await pusher.stop()
        if self._session is not None:
            with contextlib.suppress(Exception):
                await self._session.close()

    def offer(self, head: Head) -> None:
        for pusher in self.pushers:
            pusher.offer(head)

    def forget(self) -> None:
        for pusher in self.pushers:
            pusher.forget()
