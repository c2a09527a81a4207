"""The report builder (SPEC §8): for each sealed epoch, in order, bring the deriver up
to the seal's ``seq``, sign every agent's report and card statement, the epoch's
settlement, checkpoint and note with the bureau key, and store them in one transaction
(:func:`bureau.storage.epochs.store_epoch`; the checkpoint row, written last, also says
"this epoch's reports are complete").

A build reads like a sentence: read the sealed epoch once (its policy and the tree's
root at the seal: :class:`SealedEpoch`), derive and sign its reports, sign the rest
(:meth:`ReportBuilder.sign_rest`), store it all (storage owns the transaction).

Every byte is a function of the entries: payloads are canonical JSON, Ed25519 is
deterministic, so any process (or ``bureau rebuild``) signing the same epoch writes the
same bytes, and ``ON CONFLICT DO NOTHING`` makes a second writer harmless.

Each epoch is scored by its own policy (:mod:`bureau.evidence.policies`). The deriver is
bound to one policy: when the next epoch to build has another, it starts again from
entry 1 under the new one (a policy change is rare, and one cold derivation costs what
the first seal of a ledger does; keeping a deriver per policy would double the memory
and the work of every seal instead). docs/epochs-and-reports.md has the figures.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import nacl.signing

from bureau import ledger_keys, metrics
from bureau.evidence.policies import EpochPolicy, policy_of_epoch
from bureau.settlement.earn import Records
from bureau.settlement.settle import sign_settlement
from bureau.storage import db
from bureau.storage.epochs import EpochNote, SignedEpoch, store_checkpoint, store_epoch
from bureau.storage.reports import AlreadyStored, Seal, seals
from bureau.transparency.heads import LogKey
from bureau.transparency.tree import root_at
from bureau.views.cards import sign_cards
from bureau.views.derive import Deriver, advance
from bureau.views.shards import ShardPool
from bureau.views.sign import REPORT_TYPE, sign_checkpoint_envelope, sign_many

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class SealedEpoch:
    """One sealed epoch as it is built: its seal, the policy that scores it (and its
    hash), and the tree's root at the seal, which its checkpoint and its note both
    carry: each read once per build."""

    seal: Seal
    scored_by: EpochPolicy
    root: bytes

    @classmethod
    async def read(cls, conn: db.Connection, seal: Seal) -> SealedEpoch:
        return cls(seal, await policy_of_epoch(conn, seal.epoch, seal.last_seq),
                   await root_at(conn, seal.last_seq))


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

    def _deriver_for(self, scored_by: EpochPolicy, upto: int) -> Deriver:
        """The deriver, started again from entry 1 when it is bound to another policy or
        is past ``upto`` (epochs are only ever built in order)."""
        d = self.deriver
        if d is None or d.policy_hash != scored_by.hash or d.seq > upto:
            d = self.deriver = Deriver(scored_by.policy, scored_by.hash)
        return d

    def _checkpoint(self, sealed: SealedEpoch) -> bytes:
        seal = sealed.seal
        return sign_checkpoint_envelope(self.key, seal.epoch, seal.last_seq, seal.head, sealed.root)

    async def sign_epoch(self, conn: db.Connection,
                         seal: Seal) -> tuple[list[str], list[bytes], bytes]:
        """Agents, their signed report envelopes, and the checkpoint envelope."""
        sealed = await SealedEpoch.read(conn, seal)
        agents, envelopes = await self.sign_reports(conn, sealed)
        return agents, envelopes, self._checkpoint(sealed)

    async def sign_reports(self, conn: db.Connection,
                           sealed: SealedEpoch) -> tuple[list[str], list[bytes]]:
        """Every agent's signed report of the epoch, sorted by agent."""
        seal, t0 = sealed.seal, time.perf_counter()
        if self._shards is not None:
            agents, envelopes = await self._shards.sign_epoch(seal, sealed.scored_by.hash)
            log.info("epoch %d: derived and signed in %d processes in %.2f s", seal.epoch,
                     self._shards.shards, time.perf_counter() - t0)
            return agents, envelopes
        deriver = self._deriver_for(sealed.scored_by, seal.last_seq)
        await advance(conn, deriver, seal.last_seq)
        t1 = time.perf_counter()

        def sign() -> tuple[list[str], list[bytes]]:
            agents, bodies = [], []
            for agent, body in deriver.payloads(seal.epoch, seal.last_seq, seal.head):
                agents.append(agent)
                bodies.append(body)
            t2 = time.perf_counter()
            envelopes = sign_many(self.key, REPORT_TYPE, bodies, self._threads)
            log.info("epoch %d: derive %.2f s, payloads %.2f s, sign %.2f s", seal.epoch,
                     t1 - t0, t2 - t1, time.perf_counter() - t2)
            return agents, envelopes

        return await asyncio.to_thread(sign)

    async def sign_rest(self, conn: db.Connection, sealed: SealedEpoch,
                        records: Records) -> SignedEpoch:
        """Everything of the epoch but its reports, signed: its note (SPEC §8.1: the
        tree head at the seal, kept with every other tree head), its settlement (from
        the evaluators' ``records`` as of the seal) and its checkpoint."""
        seal, root = sealed.seal, sealed.root
        note = EpochNote(seal.last_seq, root, self.log_key.sign(seal.last_seq, root))
        settlement = await sign_settlement(conn, self.key, seal, sealed.scored_by.policy,
                                           records)
        return SignedEpoch(seal.epoch, note, settlement, self._checkpoint(sealed))

    async def build(self, conn: db.Connection, seal: Seal) -> int:
        """Build and store one sealed epoch; return the number of reports. Only with the
        key in force at the seal's position (SPEC §3 r3; else
        :class:`~bureau.ledger_keys.NotInForce`, nothing signed)."""
        await ledger_keys.require_in_force(conn, self.log_key.key_id, seal.last_seq)
        start = time.perf_counter()
        sealed = await SealedEpoch.read(conn, seal)
        if self._shards is not None:
            count = await self._build_in_workers(conn, sealed, self._shards)
        else:
            count = await self._build_here(conn, sealed)
        elapsed = time.perf_counter() - start
        metrics.REPORT_BUILD_SECONDS.observe(elapsed)
        log.info("epoch %d: %d reports signed and stored in %.2f s", seal.epoch, count,
                 elapsed)
        return count

    async def _build_here(self, conn: db.Connection, sealed: SealedEpoch) -> int:
        agents, envelopes = await self.sign_reports(conn, sealed)
        cards = await asyncio.to_thread(sign_cards, self.key, envelopes, self._threads)
        assert self.deriver is not None
        rest = await self.sign_rest(conn, sealed, self.deriver.book)
        try:
            await store_epoch(conn, dataclasses.replace(
                rest, agents=agents, reports=envelopes, cards=cards))
        except AlreadyStored:
            log.info("epoch %d: already stored by another writer", sealed.seal.epoch)
        return len(agents)

    async def _build_in_workers(self, conn: db.Connection, sealed: SealedEpoch,
                                shards: ShardPool) -> int:
        # The workers insert the reports (and their cards); the checkpoint, last, makes
        # them visible.
        count = await shards.store_epoch(sealed.seal, sealed.scored_by.hash)
        await store_checkpoint(conn, await self.sign_rest(conn, sealed, shards.book))
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
