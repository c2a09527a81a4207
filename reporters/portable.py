"""Reputation that travels (SPEC §9.1 r4; docs/transparency.md, "Proof bundles and
cards"): the formats of a report's **proof bundle** and of its compact **card**, and
the canonical bytes of the card's signed statement. The bureau builds them with these
functions; :func:`reporters.verify_bundle` and :func:`reporters.verify_card` check them
with no network at all.

* The **bundle** is one JSON document: the signed report, its epoch's signed
  checkpoint, the log proof (a C2SP tlog-proof: the report's ``ledger.head`` as leaf
  ``seq − 1`` of a tree the bureau signed, with the witnesses' cosignatures), the
  consistency proof from the epoch's tree to that tree when it is a later one (the
  smallest head at least as large that the witnesses cosigned most), and the bureau's
  key history up to the keys that signed.
* The **card** is at most :data:`MAX_CARD_BYTES` bytes of canonical JSON: a
  bureau-signed statement (``application/vnd.bureau.card.v1+json``: the subject, the
  epoch, the ledger position, the policy hash, the score and interval, and the BLAKE3
  of the report's payload) and the same log proof. It is signed when the epoch is
  sealed, with the key in force there, and stored: what an A2A card extension, an MCP
  registry entry's publisher-provided ``_meta`` or an ERC-8004 feedback file carries.

Pure: no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from reporters import wire
from reporters.tlog.note import format_note, parse_note
from reporters.tlog.tlogproof import TlogProof

BUNDLE_FORMAT = "bureau-proof-bundle/v1"
CARD_FORMAT = "bureau-card/v1"
#: the payload type of a card's signed statement
CARD_TYPE = wire.payload_type("card")
#: a card's canonical JSON fits in this many bytes: with the few bytes that wrap it, it
#: stays within the MCP registry's 4,096 bytes of publisher-provided metadata
MAX_CARD_BYTES = 4000
#: the keys of a card statement
STATEMENT_KEYS = ("agent", "epoch", "ledger", "policy", "report", "score")


def card_statement(report_payload: bytes) -> bytes:
    """The canonical bytes of a card's statement, from the report's payload bytes (the
    bytes the report's signature covers): the report's agent, epoch, ledger, policy and
    score as they are, and ``report``, the BLAKE3 of those payload bytes."""
    report = json.loads(report_payload)
    # the C encoder where it writes RFC 8785's bytes (canonical_json_fast): ~10x faster
    # than the general one, at one statement a report a seal
    return wire.canonical_json_fast({
        "agent": report["agent"], "epoch": report["epoch"], "ledger": report["ledger"],
        "policy": report["policy"], "report": wire.blake3_hex(report_payload),
        "score": report["score"]})


def payload_of(envelope: bytes) -> bytes:
    """The payload bytes of a DSSE envelope the bureau stored."""
    return wire.b64decode_canonical(json.loads(envelope)["payload"])


def bundle_prefix(checkpoint: bytes, log: TlogProof, consistency: Sequence[bytes],
                  keys: Sequence[Mapping[str, Any]]) -> bytes:
    """Every byte of an epoch's bundles before the report: canonical JSON sorts the
    report last, and a stored envelope is canonical JSON already, so a bundle is this,
    the report envelope's bytes and ``}``. (Measured: the mirror writes an epoch's
    bundles ~10x faster than by encoding each whole document.)"""
    head = wire.canonical_json({
        "format": BUNDLE_FORMAT, "checkpoint": json.loads(checkpoint), "log": log.text(),
        "consistency": [h.hex() for h in consistency], "keys": [dict(k) for k in keys]})
    return head[:-1] + b',"report":'


def bundle_document(report: bytes, checkpoint: bytes, log: TlogProof,
                    consistency: Sequence[bytes], keys: Sequence[Mapping[str, Any]]) -> bytes:
    """A proof bundle, as canonical JSON: ``report`` and ``checkpoint`` are the stored
    envelopes (canonical JSON), ``log`` the tlog-proof of the report's head,
    ``consistency`` the proof from the epoch's tree size to the log proof's (empty when
    they are one), ``keys`` the key history as ``/v1/bureau`` lists it."""
    return bundle_prefix(checkpoint, log, consistency, keys) + report + b"}"


def card_prefix(log: TlogProof) -> bytes:
    """Every byte of an epoch's cards before the statement (sorted last, like the
    bundle's report): a card is this, the stored statement envelope and ``}``."""
    return wire.canonical_json({"format": CARD_FORMAT, "log": log.text()})[:-1] \
        + b',"statement":'


def card_document(statement: bytes, log: TlogProof,
                  budget: int = MAX_CARD_BYTES) -> dict[str, Any]:
    """A card: the signed ``statement`` envelope and the log proof. A note with so many
    cosignatures that the card would pass ``budget`` bytes (:data:`MAX_CARD_BYTES`, or
    less where what wraps the card must fit too) keeps the bureau's own signature and as
    many cosignatures as fit, in the order served (the bundle carries them all)."""
    doc: dict[str, Any] = json.loads(card_document_bytes(statement, log, budget))
    return doc


def card_document_bytes(statement: bytes, log: TlogProof,
                        budget: int = MAX_CARD_BYTES) -> bytes:
    """:func:`card_document` as canonical JSON."""
    note = parse_note(log.checkpoint)
    lines = [s.line for s in note.signatures]
    while True:
        trimmed = TlogProof(log.index, log.hashes, format_note(note.text, lines))
        card = card_prefix(trimmed) + statement + b"}"
        if len(card) <= budget:
            return card
        if len(lines) <= 1:
            raise ValueError(f"a card of {len(card)} bytes, even with no cosignature: "
                             "more than a card may be")
        lines.pop()


def card_bytes(card: Mapping[str, Any]) -> bytes:
    """A card as it is measured and served: canonical JSON."""
    return wire.canonical_json(card)
