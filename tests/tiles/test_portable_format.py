"""The bundle and card formats (reporters.portable) as pure code: a bundle spliced from
its epoch's prefix is the canonical JSON of the whole document, and a card whose note
carries too many cosignatures keeps the bureau's signature and those that fit."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nacl.signing
import pytest

from reporters import VerificationError, verify_bundle, verify_card, wire
from reporters.check.cli import main as check_main
from reporters.portable import (
    MAX_CARD_BYTES,
    bundle_document,
    bundle_prefix,
    card_document,
    card_prefix,
    card_statement,
)
from reporters.tlog.checkpoint import Checkpoint, cosign, log_signer, sign_checkpoint_note
from reporters.tlog.merkle import leaf_hash, node_hash
from reporters.tlog.note import COSIGNATURE_V1, Signer
from reporters.tlog.tlogproof import TlogProof

KEY = wire.generate_key()
LOG = log_signer("bureau-test-log", KEY)


def _report(agent: str, seq: int, head: str) -> bytes:
    payload = {"agent": agent, "epoch": 3, "ledger": {"seq": seq, "head": head},
               "policy": "ab" * 32, "score": {"value": 0.5, "low": 0.25, "high": 0.75,
                                              "weight": 4.0, "interactions": 4},
               "name": "x", "outcomes": {}}
    return wire.sign_envelope_bytes(KEY, wire.payload_type("report"),
                                    wire.canonical_json(payload))


def _log(cosigners: int) -> tuple[TlogProof, str]:
    head = "cd" * 32
    root = leaf_hash(bytes.fromhex(head))  # a tree of one leaf: the head
    checkpoint = Checkpoint(LOG.name, 1, root)
    note = sign_checkpoint_note(checkpoint, LOG)
    for i in range(cosigners):
        note += cosign(checkpoint, Signer(f"witness.test/w{i}", wire.generate_key(),
                                          COSIGNATURE_V1), 1_700_000_000 + i)
    return TlogProof(0, (), note), head


def test_a_spliced_bundle_is_the_canonical_document() -> None:
    log, head = _log(2)
    report = _report(wire.signing_key_id(wire.generate_key()), 1, head)
    checkpoint = wire.sign_envelope_bytes(KEY, wire.payload_type("checkpoint"),
                                          wire.canonical_json({"epoch": 3}))
    keys = [{"key": wire.signing_key_id(KEY), "vkey": LOG.verifier.vkey, "from_seq": 1}]
    whole = bundle_document(report, checkpoint, log, [], keys)
    assert whole == bundle_prefix(checkpoint, log, [], keys) + report + b"}"
    assert wire.canonical_json(json.loads(whole)) == whole


def test_a_card_with_many_cosignatures_keeps_those_that_fit() -> None:
    agent = wire.signing_key_id(wire.generate_key())
    log, head = _log(40)
    report = _report(agent, 1, head)
    body = card_statement(wire.b64decode_canonical(json.loads(report)["payload"]))
    statement = wire.sign_envelope_bytes(KEY, wire.payload_type("card"), body)
    assert len(card_prefix(log) + statement) > MAX_CARD_BYTES  # all forty would not fit
    card = card_document(statement, log)
    encoded = wire.canonical_json(card)
    assert len(encoded) <= MAX_CARD_BYTES
    kept = TlogProof.parse(card["log"]).checkpoint
    assert kept.startswith(log.checkpoint.split("\n\n")[0])
    assert f"— {LOG.name} " in kept and 0 < kept.count("— witness.test/") < 40
    checked = verify_card(card, [LOG.verifier.vkey], agent=agent, epoch=3)
    assert checked.facts["score"]["value"] == 0.5
    for keyid in ([], {}, None):  # a TypeError (unhashable), before
        card["statement"]["signatures"][0]["keyid"] = keyid
        with pytest.raises(VerificationError) as failed:
            verify_card(card, [LOG.verifier.vkey])
        assert failed.value.code == "BAD_KEY"


def _forged_by_a_key_of_its_own_history(signer: nacl.signing.SigningKey
                                        ) -> dict[str, Any]:
    """A bundle whose report, checkpoint and note ``signer`` signed, with a key history
    that names the bureau's genesis key (KEY) from seq 1 and ``signer`` from seq 2: every
    part of it verifies against the key the history puts in force there."""
    agent = wire.signing_key_id(wire.generate_key())
    first, head = "ab" * 32, "cd" * 32
    root = node_hash(leaf_hash(bytes.fromhex(first)), leaf_hash(bytes.fromhex(head)))
    report = _signed(signer, "report", {
        "agent": agent, "epoch": 3, "ledger": {"seq": 2, "head": head}, "policy": "ab" * 32,
        "score": {"value": 0.99, "low": 0.98, "high": 1.0, "weight": 9.0,
                  "interactions": 900}, "name": "x", "outcomes": {}})
    checkpoint = _signed(signer, "checkpoint", {"epoch": 3, "seq": 2, "head": head,
                                                "entries": 2, "root": root.hex()})
    note = sign_checkpoint_note(Checkpoint(LOG.name, 2, root), log_signer(LOG.name, signer))
    log = TlogProof(1, (leaf_hash(bytes.fromhex(first)),), note)
    keys = [{"key": wire.signing_key_id(KEY), "vkey": LOG.verifier.vkey, "from_seq": 1},
            {"key": wire.signing_key_id(signer),
             "vkey": log_signer(LOG.name, signer).verifier.vkey, "from_seq": 2}]
    doc: dict[str, Any] = json.loads(bundle_document(report, checkpoint, log, [], keys))
    return doc


def _signed(key: nacl.signing.SigningKey, kind: str, payload: dict[str, Any]) -> bytes:
    return wire.sign_envelope_bytes(key, wire.payload_type(kind), wire.canonical_json(payload))


def test_a_bundle_signed_by_a_key_only_its_own_history_names_fails() -> None:
    """The key history a bundle carries is the word of whoever hands the bundle over (the
    agent it rates): a key it names that the reader did not give (``--key``) signs
    nothing the reader trusts, or anyone could forge a score that verifies."""
    mallory = wire.generate_key()
    forged = _forged_by_a_key_of_its_own_history(mallory)
    with pytest.raises(VerificationError) as failed:
        verify_bundle(forged, [LOG.verifier.vkey])
    assert failed.value.code == "BAD_KEY" and wire.signing_key_id(mallory) in \
        failed.value.detail
    # a reader who was given both keys (a bureau that rotated its key) trusts both
    rotated = verify_bundle(forged, [LOG.verifier.vkey,
                                     log_signer(LOG.name, mallory).verifier.vkey])
    assert rotated.facts["score"]["value"] == 0.99


def test_a_card_reindented_by_whoever_carries_it_still_verifies(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """4,000 bytes is the card's canonical size: a card as full as it may be, printed
    again with indentation (``jq`` does, copying it out of an agent card), is the same
    card; one whose canonical form is larger is not a card."""
    agent = wire.signing_key_id(wire.generate_key())
    log, head = _log(40)
    report = _report(agent, 1, head)
    body = card_statement(wire.b64decode_canonical(json.loads(report)["payload"]))
    card = card_document(wire.sign_envelope_bytes(KEY, wire.payload_type("card"), body), log)
    assert len(wire.canonical_json(card)) > MAX_CARD_BYTES - 200  # as full as it may be
    indented = tmp_path / "card.json"
    indented.write_text(json.dumps(card, indent=2))
    assert indented.stat().st_size > MAX_CARD_BYTES
    assert check_main(["card", str(indented), "--key", LOG.verifier.vkey]) == 0, \
        capsys.readouterr().out
    oversized = TlogProof.parse(card["log"])
    card["log"] = TlogProof(oversized.index, oversized.hashes, log.checkpoint).text()
    indented.write_bytes(wire.canonical_json(card))
    assert check_main(["card", str(indented), "--key", LOG.verifier.vkey]) == 1
    assert "a card is at most 4000" in capsys.readouterr().out
    indented.write_text('{"format": "bureau-card/v1", "epoch": 9007199254740993}')
    assert check_main(["card", str(indented), "--key", LOG.verifier.vkey]) == 1
    assert capsys.readouterr().out.count("\n") == 1  # one line, no traceback
