"""Checking a proof bundle or a card with no network at all (SPEC §9.1 r4): what
``bureau-check bundle`` and ``bureau-check card`` run. The formats are
:mod:`reporters.portable`'s.

Both checks are pure and raise :class:`VerificationError` naming the step that
failed; they return a :class:`Carried`: the steps verified, in words, what could not
be checked offline, and the facts a script wants. The keys trusted are the caller's
(``--key``: the bureau's note vkeys), never the document's: a bundle's key history may
say which of the keys given was in force where, but a signature by a key it names that
the caller did not give fails (``BAD_KEY``). The history is the word of whoever hands
the bundle over — the agent it rates, often — and would otherwise let anyone add a key
of their own and sign any score with it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from reporters import wire
from reporters._internal.errors import VerificationError
from reporters._internal.keyhistory import KeyHistory
from reporters._internal.transparency import (
    TreeHead,
    verify_consistency,
    verify_inclusion,
    verify_note,
)
from reporters._internal.verify import (
    verify_card_statement,
    verify_checkpoint,
    verify_report,
)
from reporters.portable import BUNDLE_FORMAT, CARD_FORMAT, STATEMENT_KEYS
from reporters.tlog.checkpoint import VerifiedCheckpoint
from reporters.tlog.errors import TlogError
from reporters.tlog.note import ED25519, Verifier
from reporters.tlog.tlogproof import TlogProof

_HEX64 = re.compile(r"[0-9a-f]{64}")
NETWORK = ("that this tree is a prefix of the tree the bureau publishes now (a "
           "consistency proof from the bureau or its mirror: bureau-check report URL "
           "AGENT --epoch E)")


@dataclass
class Carried:
    """What an offline check verified (``steps``), what it could not (``unchecked``),
    and the facts read (``facts``)."""

    steps: list[str] = field(default_factory=list)
    unchecked: list[str] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)


def _bad(path: str, detail: str) -> VerificationError:
    return VerificationError("BAD_BUNDLE", path, detail)


def _trusted(vkeys: Sequence[str]) -> list[Verifier]:
    if not vkeys:
        raise VerificationError("BAD_KEY", "", "give the bureau's vkey (--key)")
    out = []
    for i, vkey in enumerate(vkeys):
        try:
            verifier = Verifier.from_vkey(vkey)
        except TlogError as exc:
            raise VerificationError("BAD_KEY", f"/keys/{i}", exc.detail) from None
        if verifier.sig_type != ED25519:
            raise VerificationError("BAD_KEY", f"/keys/{i}", "the bureau's vkey is a plain "
                                                            "Ed25519 note key")
        out.append(verifier)
    return out


def _document(doc: Any, form: str, fields: dict[str, type]) -> Mapping[str, Any]:
    if not isinstance(doc, Mapping) or doc.get("format") != form:
        raise _bad("/format", f"not a document of format {form}")
    for name, kind in fields.items():
        if not isinstance(doc.get(name), kind):
            raise _bad(f"/{name}", f"{name} is a {kind.__name__}")
    return doc


def _claims(out: Carried, doc: Mapping[str, Any], want_agent: str | None,
            want_epoch: int | None, what: str) -> None:
    """``doc`` (a report, a card's statement) is about ``want_agent`` and of
    ``want_epoch``, each when given."""
    agent, epoch = doc.get("agent"), doc.get("epoch")
    if want_agent is not None and agent != want_agent:
        raise VerificationError("BAD_BUNDLE", "/agent", f"the {what} is about "
                                f"{str(agent)[:80]}, not {want_agent}")
    if want_epoch is not None and epoch != want_epoch:
        raise VerificationError("BAD_BUNDLE", "/epoch", f"the {what} is of epoch {epoch}, "
                                f"not of epoch {want_epoch}")
    if want_agent is None:
        out.unchecked.append(f"whose {what} this should be: it is about {agent} (give "
                             "--agent to require it)")


def _log(text: Any, seq: int, head: str, tree_of: Any, path: str
         ) -> tuple[TlogProof, VerifiedCheckpoint]:
    """The log proof: the note verified by ``tree_of(note)``, and ``head`` its leaf
    ``seq − 1``."""
    try:
        proof = TlogProof.parse(text)
    except TlogError as exc:
        raise VerificationError(exc.code, path, exc.detail) from None
    if proof.index != seq - 1:
        raise VerificationError("BAD_PROOF", path, f"the log proof is of leaf {proof.index}, "
                                f"not of the report's head, leaf {seq - 1}")
    tree = tree_of(proof.checkpoint)
    if tree.size < seq:
        raise VerificationError("BAD_PROOF", path, f"the log proof's tree (size "
                                f"{tree.size}) does not reach seq {seq}")
    verify_inclusion(head, {"leaf_index": seq - 1, "tree_size": tree.size,
                            "hashes": [h.hex() for h in proof.hashes]}, tree,
                     leaf_index=seq - 1)
    return proof, tree


def _ledger_position(ledger: Any) -> tuple[int, str] | None:
    """The ``seq`` and ``head`` a report's ``ledger`` names; ``None`` when it names no
    such pair."""
    seq = ledger.get("seq") if isinstance(ledger, Mapping) else None
    head = ledger.get("head") if isinstance(ledger, Mapping) else None
    if type(seq) is not int or seq < 1 or not isinstance(head, str) \
            or not _HEX64.fullmatch(head):
        return None
    return seq, head


def _history(keys: Any, trusted: list[Verifier]) -> KeyHistory:
    """A bundle's key history, holding at least one of the keys the caller gave."""
    history = KeyHistory.from_json(keys)
    if not any(history.with_vkey(v.vkey) for v in trusted):
        raise VerificationError("BAD_KEY", "/keys", "the bundle's key history holds none of "
                                "the keys given (--key): " + history.describe())
    return history


def _epoch_checkpoint(doc: Any, history: KeyHistory, report: Mapping[str, Any], seq: int,
                      head: str) -> Mapping[str, Any]:
    """The bundle's checkpoint, signed, naming the report's epoch, seq and head."""
    cp = verify_checkpoint(doc, history)
    if (cp.get("epoch"), cp.get("seq"), cp.get("head"), cp.get("entries")) != (
            report.get("epoch"), seq, head, seq) or not isinstance(cp.get("root"), str) \
            or not _HEX64.fullmatch(cp["root"]):
        raise _bad("/checkpoint", "the checkpoint is not of the report's epoch, seq and head")
    return cp


def _note_signed(tree: VerifiedCheckpoint) -> str:
    """The step that says who signed and cosigned a log proof's note."""
    cosigned = [c.witness for c in tree.cosignatures]
    return (f"the note of tree size {tree.size} is signed by {tree.origin}"
            + (f" and cosigned by {', '.join(cosigned)}" if cosigned else ""))


def _offline(out: Carried, witnesses: Sequence[str]) -> None:
    """What a check with no network leaves unchecked."""
    if not witnesses:
        out.unchecked.append("any witness's cosignature (give --witness and --quorum)")
    out.unchecked.append(NETWORK)


def _given(history: KeyHistory, trusted: list[Verifier], what: str, position: int,
           path: str) -> None:
    """The key in force at ``position`` by the bundle's history is one the caller gave:
    a key only the bundle names vouches for nothing."""
    key = history.at(position)
    if key.vkey not in {v.vkey for v in trusted}:
        raise VerificationError("BAD_KEY", path, f"{what} is signed by {key.key_id}, the "
                                f"key the bundle's own key history puts in force at seq "
                                f"{position}, which was not given (--key): give its vkey "
                                "only if you know it to be the bureau's")


def verify_bundle(doc: Any, vkeys: Sequence[str], *, witnesses: Sequence[str] = (),
                  quorum: int = 0, agent: str | None = None,
                  epoch: int | None = None) -> Carried:
    """A proof bundle, against the bureau vkeys ``vkeys`` and, optionally, ``quorum``
    cosignatures of the witness vkeys ``witnesses``:

    1. its key history holds a trusted key, and every signature below is by the key in
       force, by that history, where it stands, and that key is one of ``vkeys``;
    2. the report is signed, and is the ``agent``'s and of ``epoch`` when given;
    3. its epoch's checkpoint is signed and names the report's epoch, seq and head;
    4. the log proof's note is signed (and cosigned by ``quorum`` witnesses), is the
       epoch's tree (size and root) or a later tree the consistency proof extends it
       to, and has the report's head as leaf ``seq − 1``.
    """
    out = Carried()
    trusted = _trusted(vkeys)
    d = _document(doc, BUNDLE_FORMAT, {"report": Mapping, "checkpoint": Mapping, "log": str,
                                        "consistency": list, "keys": list})
    history = _history(d["keys"], trusted)
    report = verify_report(d["report"], history)
    position = _ledger_position(report.get("ledger"))
    if position is None:
        raise _bad("/report", "the report names no ledger seq and head")
    seq, head = position
    _claims(out, report, agent, epoch, "report")
    _given(history, trusted, "the report", seq, "/report")
    out.steps.append(f"the report of {report.get('agent')} at epoch {report.get('epoch')} "
                     f"is signed by {history.at(seq).key_id}, the key in force at seq {seq}")
    cp = _epoch_checkpoint(d["checkpoint"], history, report, seq, head)
    out.steps.append(f"the checkpoint of epoch {cp['epoch']} is signed and names the same "
                     f"seq {seq} and head {head}: tree size {seq}, root {cp['root']}")

    def tree_of(note: str) -> VerifiedCheckpoint:
        try:
            return verify_note(note, history, witnesses=witnesses, threshold=quorum)
        except VerificationError as exc:
            raise VerificationError(exc.code, "/log", exc.detail) from None

    _, tree = _log(d["log"], seq, head, tree_of, "/log")
    _given(history, trusted, "the log proof's note", tree.size, "/log")
    consistency = {"from": seq, "to": tree.size, "hashes": d["consistency"]}
    try:
        verify_consistency(consistency, TreeHead(seq, cp["root"]), tree)
    except VerificationError as exc:
        raise VerificationError(exc.code, "/consistency", exc.detail) from None
    cosigned = [c.witness for c in tree.cosignatures]
    out.steps.append(_note_signed(tree)
                     + (f", and the epoch's tree (size {seq}) is a prefix of it"
                        if tree.size > seq else ": the epoch's tree, root and all"))
    out.steps.append(f"entry {seq} ({head}), the seal of epoch {cp['epoch']}, is leaf "
                     f"{seq - 1} of that tree")
    _offline(out, witnesses)
    out.facts.update(agent=report.get("agent"), epoch=report.get("epoch"),
                     ledger={"seq": seq, "head": head}, score=report.get("score"),
                     policy=report.get("policy"), tree={"size": tree.size,
                                                        "root": tree.root_hex},
                     cosigned_by=cosigned)
    return out


def _statement(envelope: Any, trusted: list[Verifier]) -> dict[str, Any]:
    signatures = envelope.get("signatures") if isinstance(envelope, Mapping) else None
    named = signatures[0].get("keyid") if isinstance(signatures, list) and signatures \
        and isinstance(signatures[0], Mapping) else None
    by_id = {wire.key_id(v.public_key): v for v in trusted}
    if not isinstance(named, str) or named not in by_id:
        raise VerificationError("BAD_KEY", "/statement/signatures/0/keyid",
                                f"the card is signed by {str(named)[:80]}, not by a key "
                                "given (--key)")
    try:
        return verify_card_statement(envelope, str(named))
    except VerificationError as exc:
        raise VerificationError(exc.code, "/statement" + exc.path, exc.detail) from None


def verify_card(doc: Any, vkeys: Sequence[str], *, witnesses: Sequence[str] = (),
                quorum: int = 0, agent: str | None = None,
                epoch: int | None = None) -> Carried:
    """A card, against the bureau vkeys ``vkeys`` (the key that signed its statement,
    and the key that signed its log proof's note, must be among them) and, optionally,
    ``quorum`` cosignatures of ``witnesses``:

    1. its statement is signed, and is the ``agent``'s and of ``epoch`` when given;
    2. the log proof's note is signed (and cosigned by ``quorum`` witnesses), and has
       the statement's ledger head as leaf ``seq − 1``.
    """
    out = Carried()
    trusted = _trusted(vkeys)
    d = _document(doc, CARD_FORMAT, {"statement": Mapping, "log": str})
    stmt = _statement(d["statement"], trusted)
    if sorted(stmt) != sorted(STATEMENT_KEYS):
        raise _bad("/statement/payload", f"a card statement has {', '.join(STATEMENT_KEYS)}")
    ledger, score = stmt["ledger"], stmt["score"]
    position = _ledger_position(ledger)
    if position is None or not isinstance(stmt["report"], str) \
            or not _HEX64.fullmatch(stmt["report"]) \
            or not (score is None or isinstance(score, Mapping)):
        raise _bad("/statement/payload", "the statement's ledger, report hash or score "
                                         "is not of its shape")
    seq, head = position
    _claims(out, stmt, agent, epoch, "card")
    signer = d["statement"]["signatures"][0]["keyid"]
    shown = "no score" if score is None else (
        f"score {score.get('value')} in [{score.get('low')}, {score.get('high')}]")
    out.steps.append(f"the card of {stmt['agent']} at epoch {stmt['epoch']} ({shown}, "
                     f"policy {stmt['policy']}, report {stmt['report']}) is signed by "
                     f"{signer}")

    def tree_of(note: str) -> VerifiedCheckpoint:
        last: VerificationError | None = None
        for v in trusted:
            try:
                return verify_note(note, v.vkey, witnesses=witnesses, threshold=quorum)
            except VerificationError as exc:
                last = exc
                if exc.code not in ("BAD_KEY", "BAD_NOTE"):
                    break
        assert last is not None
        raise VerificationError(last.code, "/log", last.detail)

    _, tree = _log(d["log"], seq, head, tree_of, "/log")
    cosigned = [c.witness for c in tree.cosignatures]
    out.steps.append(_note_signed(tree)
                     + f", and entry {seq} ({head}) is leaf {seq - 1} of that tree")
    out.unchecked.append(f"the report itself: the card carries the BLAKE3 of its payload "
                         f"({stmt['report']}); the bundle carries the report")
    _offline(out, witnesses)
    out.facts.update(agent=stmt["agent"], epoch=stmt["epoch"], ledger=dict(ledger),
                     score=score, policy=stmt["policy"], report=stmt["report"],
                     tree={"size": tree.size, "root": tree.root_hex}, cosigned_by=cosigned)
    return out
