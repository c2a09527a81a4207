"""Ledger entries -> scoring inputs (SPEC §1.4: views are pure functions of the ledger).

Scoring (:mod:`bureau.scoring`) reads frozen dataclasses; this module makes them from
stored entries and nothing else: the entry's canonical bytes, its seq, its id, its kind
and its signer. No clock, no other table. Payloads were validated when they were
admitted, so they are decoded here with the plain JSON parser; ``bureau verify`` is what
re-checks every id, link and signature.

Entries are read in seq ranges (:func:`read_items`), a chunk at a time, so that a
million-entry ledger never sits in memory as raw bytes.
"""

from __future__ import annotations

import binascii
import json
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson

from bureau.kinds import BY_NAME, EVIDENCE_KINDS, EXCLUSION, REPORTER
from bureau.scoring.inputs import (
    Attestation,
    Evidence,
    Exclusion,
    Fact,
    Item,
    LinkList,
    Probe,
    ReporterUpdate,
    ValueJudgment,
)
from bureau.storage import db, entries

CHUNK = 20_000

# Canonical JSON sorts keys, so an envelope entry always starts like this and its
# payload runs to the next quote (base64 has none). Anything else takes the slow path.
_ENVELOPE_PREFIX = b'{"envelope":{"payload":"'


def payload_of(raw: bytes) -> dict[str, Any]:
    """The decoded payload of a stored envelope entry (its canonical bytes)."""
    if raw.startswith(_ENVELOPE_PREFIX):
        end = raw.index(b'"', len(_ENVELOPE_PREFIX))
        body = binascii.a2b_base64(raw[len(_ENVELOPE_PREFIX):end])
    else:  # pragma: no cover - canonical entries always take the fast path
        body = binascii.a2b_base64(json.loads(raw)["envelope"]["payload"])
    try:
        doc: dict[str, Any] = orjson.loads(body)
    except orjson.JSONDecodeError:  # pragma: no cover - admitted payloads are strict JSON
        doc = json.loads(body)
    return doc


class StoredEntry(Protocol):
    """A stored entry as the entries table holds it, by column: ``seq``, ``kind``,
    ``signer`` (None for the bureau's own entries), ``entry`` (its canonical bytes) and
    ``epoch`` — a row of it, as read (or any mapping with those keys)."""

    def __getitem__(self, column: str, /) -> Any: ...


def decode_entry(stored: StoredEntry, entry_id: str) -> Item | None:
    """The scoring input one stored entry contributes, named ``entry_id`` (its id, or
    :func:`seq_ref` of its seq), or None (the kinds table's ``evidence`` decodes it: a
    submitted entry's payload, a bureau entry's body)."""
    k = BY_NAME.get(stored["kind"])
    if k is None or k.evidence is None:
        return None
    seq, raw, epoch = stored["seq"], stored["entry"], stored["epoch"]
    if k.payload is None:
        return k.evidence(seq, entry_id, "", json.loads(raw)["body"], epoch)
    signer = stored["signer"]
    if signer is None:
        return None
    return k.evidence(seq, entry_id, signer, payload_of(raw), epoch)


@dataclass(frozen=True, slots=True)
class EntrySpan:
    """The entries with ``after < seq <= upto``; with ``shard=(i, n)`` only those about
    the agents of shard ``i`` of ``n`` (:mod:`bureau.views.shards`)."""

    after: int
    upto: int
    shard: tuple[int, int] | None = None

    def chunks(self, size: int = CHUNK) -> list[tuple[int, int]]:
        """``(low, high)`` seq bounds (``low < seq <= high``) of ``size`` seqs at most
        each, in order, covering the span."""
        return [(low, min(self.upto, low + size)) for low in range(self.after, self.upto, size)]


#: reads the entries of the kinds scoring takes (names from the kinds table)
_EVIDENCE = entries.EvidenceEntries(EVIDENCE_KINDS, EXCLUSION.name, REPORTER.name)


def seq_ref(seq: int) -> str:
    """An entry's short name: within one ledger, seq and id name the same entry."""
    return f"#{seq}"


def _from_row(r: db.Row, short: bool) -> Item | None:
    item = decode_entry(r, seq_ref(r["seq"]) if short else r["id"])
    if short and isinstance(item, Exclusion) and r["target_seq"] is not None:
        return Exclusion(seq_ref(r["target_seq"]), item.reason)
    return item


async def read_items(conn: db.Connection, span: EntrySpan, chunk: int = CHUNK, *,
                     short_ids: bool = False) -> AsyncIterator[list[tuple[int, Item]]]:
    """Decoded items of the entries of ``span``, in seq order, a chunk of entries at a
    time (each item with the seq of the entry it came from).

    With ``short_ids`` every item's ``entry_id``, and every exclusion's target, is
    :func:`seq_ref` of the entry's seq instead of its 64-character id: the same
    identity at half the memory, for the report builder, which never shows an id."""
    for low, high in span.chunks(chunk):
        rows = await _EVIDENCE.in_range(conn, low, high, span.shard)
        out: list[tuple[int, Item]] = []
        for r in rows:
            item = _from_row(r, short_ids)
            if item is not None:
                out.append((r["seq"], item))
        del rows
        yield out


async def _targets(conn: db.Connection,
                   items: Iterable[tuple[int, Item]]) -> dict[str, tuple[int, Item | None]]:
    """The entries the exclusions in ``items`` name (by :func:`seq_ref`), decoded.
    Exclusions are rare; a target that is not an entry of this ledger names nothing."""
    seqs = sorted({int(i.target[1:]) for _, i in items
                   if isinstance(i, Exclusion) and i.target.startswith("#")})
    if not seqs:
        return {}
    rows = await entries.by_seqs(conn, seqs)
    return {seq_ref(r["seq"]): (r["seq"], decode_entry(r, seq_ref(r["seq"]))) for r in rows}


async def read_with_targets(conn: db.Connection, span: EntrySpan,
                            ) -> AsyncIterator[tuple[list[tuple[int, Item]],
                                                     dict[str, tuple[int, Item | None]]]]:
    """:func:`read_items` with short ids, each chunk with the entries its exclusions
    name (what :meth:`bureau.views.derive.Deriver.apply` takes)."""
    async for chunk in read_items(conn, span, short_ids=True):
        yield chunk, await _targets(conn, chunk)


@dataclass
class LedgerEvidence:
    """Everything reports need from entries up to one seq, in whole-ledger form."""

    facts: list[Fact] = field(default_factory=list)
    probes: list[Probe] = field(default_factory=list)
    attestations: list[Attestation] = field(default_factory=list)
    value_judgments: list[ValueJudgment] = field(default_factory=list)
    exclusions: list[Exclusion] = field(default_factory=list)
    reporter_updates: list[ReporterUpdate] = field(default_factory=list)
    #: every enrolled agent -> its current name (None: observed, never enrolled)
    names: dict[str, str | None] = field(default_factory=dict)
    #: every enrolled agent -> its links in force (SPEC §3 r3)
    links: dict[str, LinkList] = field(default_factory=dict)

    def add(self, items: Iterable[tuple[int, Item]]) -> None:
        for _, item in items:
            if isinstance(item, Fact):
                self.facts.append(item)
            elif isinstance(item, Probe):
                self.probes.append(item)
            elif isinstance(item, Attestation):
                self.attestations.append(item)
            elif isinstance(item, ValueJudgment):
                self.value_judgments.append(item)
            elif isinstance(item, Exclusion):
                self.exclusions.append(item)
            elif isinstance(item, ReporterUpdate):
                self.reporter_updates.append(item)
            elif item.enrolled or item.agent in self.names:
                if item.name is not None:
                    self.names[item.agent] = item.name
                if item.links is not None:
                    self.links[item.agent] = item.links

    def evidence(self) -> Evidence:
        return Evidence(tuple(self.facts), tuple(self.probes), tuple(self.attestations),
                        tuple(self.value_judgments), tuple(self.exclusions),
                        tuple(self.reporter_updates))

    def agents(self) -> list[str]:
        """Every agent enrolled or observed (subject of a fact, probe, attestation or
        value judgment), sorted."""
        seen: set[str] = set(self.names)
        for group in (self.facts, self.probes, self.attestations, self.value_judgments):
            seen.update(x.subject for x in group)
        return sorted(seen)


async def load_evidence(conn: db.Connection, upto: int) -> LedgerEvidence:
    """Whole-ledger evidence as of entry ``upto``: the reference (non-incremental) path."""
    ev = LedgerEvidence()
    async for chunk in read_items(conn, EntrySpan(0, upto)):
        ev.add(chunk)
    return ev
