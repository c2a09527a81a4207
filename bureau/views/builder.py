"""The report builder (SPEC §8): for each sealed epoch, in order, bring the deriver up
to the seal's ``seq``, sign every agent's report and the epoch's checkpoint with the
bureau key, and store them in one transaction (the checkpoint row therefore also says
"this epoch's reports are complete").

Every byte is a function of the entries: payloads are canonical JSON, Ed25519 is
deterministic, so any process (or ``bureau rebuild``) signing the same epoch writes the
same bytes, and ``ON CONFLICT DO NOTHING`` makes a second writer harmless. Each report's
card statement (bureau.views.cards) is signed with it and stored in the same
transaction as the checkpoint.

Each epoch is scored by its own policy (:mod:`bureau.views.policies`). The deriver is
bound to one policy: when the next epoch to build has another, it starts again from
entry 1 under the new one (a policy change is rare, and one cold derivation costs what
the first seal of a ledger does; keeping a deriver per policy would double the memory
and the work of every seal instead). docs/epochs-and-reports.md has the figures.
"""

from __future__ import annotations

import asyncio
import logging
import time
from concurrent.futures import ThreadPoolExecutor

import nacl.signing

from bureau import ledger_keys, metrics
from bureau.scoring.policy import Policy
from bureau.settlement.settle import settle_epoch
from bureau.storage import cards as card_store
from bureau.storage import db
from bureau.storage.reports import AlreadyStored, Seal, seals, store_checkpoint, store_epoch
from bureau.transparency import heads
from bureau.transparency.heads import LogKey
from bureau.transparency.tree import root_at
from bureau.views.cards import sign_cards
from bureau.views.derive import Deriver, advance
from bureau.views.policies import policy_of_epoch
from bureau.views.shards import ShardPool
from bureau.views.sign import REPORT_TYPE, sign_checkpoint_envelope, sign_many

log = logging.getLogger(__name__)


class ReportBuilder:
    """Builds and stores the reports of sealed epochs, in order, incrementally.

    With ``workers`` > 1 the deriving and signing happen in that many worker processes
    (:mod:`bureau.views.shards`), which read the entries themselves from ``dsn``;
    otherwise in this process."""

    def __init__(self, signing_key: nacl.signing.SigningKey, log_key: LogKey, *,
                 workers: int = 1, dsn: str | None = None) -> None:
        self.key = signing_key
        self.log_key = log_key
        self.deriver: Deriver | None = None
        #: the epochs the last :meth:`build_pending` left for another key to sign
        self.passed_over: list[int] = []
        self._said: set[int] = set()  # of those, the ones said in the log already
        self._threads = ThreadPoolExecutor(max_workers=4, thread_name_prefix="sign")
        self._shards: ShardPool | None = None
        if workers > 1:
            if dsn is None:
                raise ValueError("report workers read the entries themselves: give a dsn")
            self._shards = ShardPool(dsn, workers, signing_key)

    def worker_pids(self) -> list[int]:
        """The report worker processes, if any are running."""
        return [] if self._shards is None else self._shards.pids()

    def close(self) -> None:
        self._threads.shutdown(wait=False)
        if self._shards is not None:
            self._shards.close()

    def reset(self) -> None:
        self.deriver = None
        self._said.clear()
        if self._shards is not None:
            self._shards.reset()

    def _deriver_for(self, policy: Policy, digest: str, upto: int) -> Deriver:
        """The deriver, started again from entry 1 when it is bound to another policy or
        is past ``upto`` (epochs are only ever built in order)."""
        d = self.deriver
        if d is None or d.policy_hash != digest or d.seq > upto:
            d = self.deriver = Deriver(policy, digest)
        return d

    async def _checkpoint(self, conn: db.Connection, seal: Seal) -> bytes:
        root = await root_at(conn, seal.last_seq)
        return sign_checkpoint_envelope(self.key, seal.epoch, seal.last_seq, seal.head, root)

    async def _store_note(self, conn: db.Connection, seal: Seal) -> None:
        """The epoch's checkpoint as a signed note (SPEC §8.1), kept with every other
        tree head, in the transaction that stores the checkpoint."""
        await heads.store(conn, self.log_key, seal.last_seq, await root_at(conn, seal.last_seq))

    async def sign_epoch(self, conn: db.Connection,
                         seal: Seal) -> tuple[list[str], list[bytes], bytes]:
        """Agents, their signed report envelopes, and the checkpoint envelope."""
        checkpoint = await self._checkpoint(conn, seal)
        t0 = time.perf_counter()
        policy, digest = await policy_of_epoch(conn, seal.epoch, seal.last_seq)
        if self._shards is not None:
            agents, envelopes = await self._shards.sign_epoch(
                seal.last_seq, seal.epoch, seal.head, digest)
            log.info("epoch %d: derived and signed in %d processes in %.2f s", seal.epoch,
                     self._shards.shards, time.perf_counter() - t0)
            return agents, envelopes, checkpoint
        deriver = self._deriver_for(policy, digest, seal.last_seq)
        await advance(conn, deriver, seal.last_seq)
        t1 = time.perf_counter()

        def sign() -> tuple[list[str], list[bytes], bytes]:
            agents, bodies = [], []
            for agent, body in deriver.payloads(seal.epoch, seal.last_seq, seal.head):
                agents.append(agent)
                bodies.append(body)
            t2 = time.perf_counter()
            envelopes = sign_many(self.key, REPORT_TYPE, bodies, self._threads)
            log.info("epoch %d: derive %.2f s, payloads %.2f s, sign %.2f s", seal.epoch,
                     t1 - t0, t2 - t1, time.perf_counter() - t2)
            return agents, envelopes, checkpoint

        return await asyncio.to_thread(sign)

    async def build(self, conn: db.Connection, seal: Seal) -> int:
        """Build and store one sealed epoch; return the number of reports. Only with the
        key in force at the seal's position (SPEC §3 r3; else
        :class:`~bureau.ledger_keys.NotInForce`, nothing signed)."""
        await ledger_keys.require_in_force(conn, self.log_key.key_id, seal.last_seq)
        start = time.perf_counter()
        if self._shards is not None:
            # The workers insert the reports (and their cards); the checkpoint, last,
            # makes them visible.
            _, digest = await policy_of_epoch(conn, seal.epoch, seal.last_seq)
            count = await self._shards.store_epoch(seal.last_seq, seal.epoch, seal.head,
                                                   digest)
            checkpoint = await self._checkpoint(conn, seal)
            policy, _ = await policy_of_epoch(conn, seal.epoch, seal.last_seq)
            async with db.transaction(conn, "store_checkpoint"):
                await self._store_note(conn, seal)
                await settle_epoch(conn, self.key, seal, policy, self._shards.book)
                await store_checkpoint(conn, seal.epoch, checkpoint)
        else:
            agents, envelopes, checkpoint = await self.sign_epoch(conn, seal)
            count = len(agents)
            cards = await asyncio.to_thread(sign_cards, self.key, envelopes, self._threads)
            assert self.deriver is not None
            try:
                async with db.transaction(conn, "store_epoch"):
                    await self._store_note(conn, seal)
                    await card_store.store(conn, seal.epoch, agents, cards)
                    # before the checkpoint, which makes the epoch (and it) visible
                    await settle_epoch(conn, self.key, seal, self.deriver.policy,
                                       self.deriver.book)
                    await store_epoch(conn, seal.epoch, agents, envelopes, checkpoint)
            except AlreadyStored:
                log.info("epoch %d: already stored by another writer", seal.epoch)
        elapsed = time.perf_counter() - start
        metrics.REPORT_BUILD_SECONDS.observe(elapsed)
        log.info("epoch %d: %d reports signed and stored in %.2f s", seal.epoch, count,
                 elapsed)
        return count

    async def build_pending(self, conn: db.Connection) -> list[int]:
        """Build every sealed epoch that has no checkpoint yet and that this process's
        key signs (the key in force at the epoch's last entry), oldest first. An epoch
        another key must sign is passed over, said once in the log, and the later ones
        are built all the same (issue 35: an epoch whose last entry is a ``keys`` entry
        needs the old key; before, it stopped every later epoch's reports for good)."""
        built = []
        self.passed_over = []
        for seal in await seals(conn, pending_only=True):
            try:
                await self.build(conn, seal)
            except ledger_keys.NotInForce as exc:
                self.passed_over.append(seal.epoch)
                if seal.epoch not in self._said:
                    self._said.add(seal.epoch)
                    log.warning("epoch %d: not built by this process: %s", seal.epoch,
                                exc.detail)
                continue
            built.append(seal.epoch)
        return built
