"""Proof bundles and cards, from what the bureau stored (SPEC §9.1 r4; the formats are
:mod:`reporters.portable`'s, docs/transparency.md "Proof bundles and cards").

Every report of an epoch shares most of its bundle: the epoch's signed checkpoint, the
log proof of the seal's head (the head's leaf ``seq − 1`` in a tree the bureau signed:
the published head of at least ``seq`` leaves that the most witnesses cosigned, the
epoch's own when none was), the consistency proof from the epoch's tree to that one,
and the key history up to it. :func:`epoch_proof` reads that once (a handful of
queries: the mirror writes an epoch's thousands of bundles and cards from one);
:func:`bundle_of` and :func:`card_of` add one agent's report or card statement.
Reads only; nothing here takes the ledger's lock.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from bureau import ledger_keys
from bureau.storage import cards, db, heads, reports
from bureau.storage.reports import Seal
from bureau.transparency.tree import fetch_nodes
from reporters.portable import (
    MAX_CARD_BYTES,
    bundle_prefix,
    card_document_bytes,
    card_prefix,
)
from reporters.tlog import proofs
from reporters.tlog.tlogproof import TlogProof


@dataclass(frozen=True)
class EpochProof:
    """What the bundles and cards of one sealed epoch share."""

    seal: Seal
    checkpoint: bytes
    log: TlogProof
    consistency: list[bytes]
    keys: list[dict[str, Any]]
    #: the bytes every bundle and card of the epoch begins with (reporters.portable)
    _bundle: bytes = field(init=False, repr=False)
    _card: bytes = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_bundle", bundle_prefix(
            self.checkpoint, self.log, self.consistency, self.keys))
        object.__setattr__(self, "_card", card_prefix(self.log))

    def bundle(self, report: bytes) -> bytes:
        """The bundle of a stored report envelope, as canonical JSON."""
        return self._bundle + report + b"}"

    def card_bytes(self, statement: bytes, budget: int = MAX_CARD_BYTES) -> bytes:
        """The card of a stored statement envelope, as canonical JSON, in at most
        ``budget`` bytes (reporters.portable.card_document)."""
        card = self._card + statement + b"}"
        return card if len(card) <= budget else card_document_bytes(statement, self.log,
                                                                    budget)

    def card(self, statement: bytes, budget: int = MAX_CARD_BYTES) -> dict[str, Any]:
        doc: dict[str, Any] = json.loads(self.card_bytes(statement, budget))
        return doc


async def epoch_proof(conn: db.Connection, seal: Seal, origin: str) -> EpochProof | None:
    """The shared part of ``seal``'s bundles and cards; None until its checkpoint (and
    so its note) is stored."""
    checkpoint = await reports.checkpoint_envelope(conn, seal.epoch)
    head = await heads.witnessed(conn, seal.last_seq)
    if checkpoint is None or head is None:
        return None
    size = seal.last_seq
    inclusion = proofs.inclusion_plan(size - 1, head.size)
    consistency = proofs.consistency_plan(size, head.size)
    nodes = await fetch_nodes(conn, inclusion.nodes | consistency.nodes)
    periods = [p for p in await ledger_keys.history(conn) if p.from_seq <= head.size]
    log = TlogProof(size - 1, tuple(inclusion.hashes(nodes)), head.note + head.cosignatures)
    return EpochProof(seal, checkpoint, log, consistency.hashes(nodes),
                      ledger_keys.history_json(periods, origin))


async def _latest_of(conn: db.Connection, agent: str, epoch: int | None, origin: str,
                     own: Callable[[db.Connection, str, int], Awaitable[bytes | None]]
                     ) -> tuple[bytes, EpochProof] | None:
    """The agent's own document of its report at ``epoch`` (default: the latest sealed),
    read by ``own``, and the epoch's shared proof; None when either is missing."""
    seal = await reports.reported_seal(conn, agent, epoch)
    if seal is None:
        return None
    document = await own(conn, agent, seal.epoch)
    shared = await epoch_proof(conn, seal, origin)
    return None if document is None or shared is None else (document, shared)


async def bundle_of(conn: db.Connection, agent: str, epoch: int | None, origin: str
                    ) -> bytes | None:
    """The proof bundle of ``agent``'s report at ``epoch`` (default: the latest sealed),
    as canonical JSON; None when there is no such report."""
    found = await _latest_of(conn, agent, epoch, origin, reports.report_envelope)
    return None if found is None else found[1].bundle(found[0])


async def card_of(conn: db.Connection, agent: str, epoch: int | None, origin: str
                  ) -> dict[str, Any] | None:
    """The card of ``agent``'s report at ``epoch`` (default: the latest sealed); None
    when there is no such report, or its epoch was built before cards were signed."""
    found = await _latest_of(conn, agent, epoch, origin, cards.card_envelope)
    return None if found is None else found[1].card(found[0])


async def cards_of(conn: db.Connection, budgets: Mapping[str, int], epoch: int,
                   origin: str) -> dict[str, dict[str, Any]]:
    """The cards of the agents of ``budgets`` at the sealed ``epoch``, by agent (those
    that have one), each in at most its budget of bytes: the epoch's shared proof read
    once, then every statement in one query. What the MCP view puts in a registry
    entry's ``_meta``, where the card and what wraps it must fit the registry's cap."""
    seal = await reports.published_seal(conn, epoch)
    if seal is None or not budgets:
        return {}
    statements = await cards.card_envelopes(conn, list(budgets), epoch)
    shared = await epoch_proof(conn, seal, origin) if statements else None
    if shared is None:
        return {}
    return {agent: shared.card(statement, budgets[agent])
            for agent, statement in statements.items()}
