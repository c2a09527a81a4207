"""What the report path writes for an epoch, one named transaction each (the ``name``
of ``bureau_db_transaction_seconds``). Each function here owns its transaction, as a
Synapse store owns its own: the report builder signs everything first, outside any
transaction, and hands over one value of it (:class:`SignedEpoch`).

* :func:`store_epoch` (``store_epoch``) — an epoch built in one process: its note, its
  reports' card statements, its settlement, its reports (COPY), and last its checkpoint,
  which makes the rest visible;
* :func:`store_reports` (``store_reports``) — a report worker's share of an epoch: its
  reports and their card statements, unseen until the epoch's checkpoint;
* :func:`store_checkpoint` (``store_checkpoint``) — once every worker stored its share:
  the note, the settlement and the checkpoint.

Inside ``bureau rebuild``'s own transaction each is a savepoint: an epoch refused
(:class:`~bureau.storage.heads.InconsistentHead`) leaves the others as they are.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from bureau.storage import cards, db, heads, reports, settlement


class EpochNote(NamedTuple):
    """The epoch's checkpoint as a signed note (SPEC §8.1): the tree head at the seal,
    kept with every other tree head."""

    size: int
    root: bytes
    note: str


class SignedSettlement(NamedTuple):
    """An epoch's signed settlement document and its rows, in leaf order."""

    envelope: bytes
    evaluators: Sequence[str]
    rows: Sequence[bytes]


@dataclass(frozen=True, slots=True)
class SignedEpoch:
    """Everything the report builder signed for one epoch: its note, its settlement
    (None: the epoch had no pool), its checkpoint envelope and, unless the report
    workers stored them (:func:`store_reports`), its reports and their card statements,
    each list in the order of ``agents``."""

    epoch: int
    note: EpochNote
    settlement: SignedSettlement | None
    checkpoint: bytes
    agents: Sequence[str] = ()
    reports: Sequence[bytes] = ()
    cards: Sequence[bytes] = ()


async def store_epoch(conn: db.Connection, signed: SignedEpoch) -> None:
    """Store an epoch built in one process, in one transaction. Another writer that
    stored it first fails this one (:data:`~bureau.storage.reports.AlreadyStored`,
    nothing written): its bytes are the same bytes. Reports a dead build's workers left
    without a checkpoint are kept, the rest added beside them."""
    async with db.transaction(conn, "store_epoch"):
        await _keep_note(conn, signed.note)
        await cards.store(conn, signed.epoch, list(signed.agents), list(signed.cards))
        # before the checkpoint, which makes the epoch (and it) visible
        await _store_settlement(conn, signed)
        if await reports.any_report(conn, signed.epoch):
            # a build whose report workers stored theirs died before its checkpoint:
            # those are the same bytes, kept; COPY would meet them at every pass and
            # the epoch would never get its checkpoint
            await reports.insert_reports(conn, signed.epoch, signed.agents, signed.reports)
        else:
            await reports.copy_reports(conn, signed.epoch, signed.agents, signed.reports)
        await reports.insert_checkpoint(conn, signed.epoch, signed.checkpoint)


async def store_reports(conn: db.Connection, epoch: int, agents: Sequence[str],
                        envelopes: Sequence[bytes], card_statements: Sequence[bytes],
                        ) -> None:
    """Store a report worker's share of an epoch (``envelopes`` and
    ``card_statements`` in the order of ``agents``), in one transaction; none of it is
    served before :func:`store_checkpoint`."""
    async with db.transaction(conn, "store_reports"):
        await reports.insert_reports(conn, epoch, agents, envelopes)
        await cards.store(conn, epoch, list(agents), list(card_statements))


async def store_checkpoint(conn: db.Connection, signed: SignedEpoch) -> None:
    """Once the report workers stored the epoch's reports: its note, its settlement and
    its checkpoint, which makes them all visible, in one transaction."""
    async with db.transaction(conn, "store_checkpoint"):
        await _keep_note(conn, signed.note)
        await _store_settlement(conn, signed)
        await reports.insert_checkpoint(conn, signed.epoch, signed.checkpoint)


async def _keep_note(conn: db.Connection, note: EpochNote) -> None:
    await heads.keep_consistent(conn, note.size, note.root, note.note)


async def _store_settlement(conn: db.Connection, signed: SignedEpoch) -> None:
    if signed.settlement is not None:
        envelope, evaluators, rows = signed.settlement
        await settlement.store_settlement(conn, signed.epoch, envelope, evaluators, rows)
