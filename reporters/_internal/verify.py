"""Check what the bureau serves, with nothing but the bytes and its key.

Both checks are pure: no I/O, no clock. Failures raise :class:`VerificationError`
whose ``path`` is a JSON Pointer into the argument.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from reporters import strictjson, wire
from reporters._internal.errors import VerificationError
from reporters._internal.keyhistory import KeyHistory
from reporters.files import Entry

REPORT_TYPE = wire.payload_type("report")
CHECKPOINT_TYPE = wire.payload_type("checkpoint")
CARD_TYPE = wire.payload_type("card")


def verify_chain(entries: Sequence[Mapping[str, Any] | Entry]) -> None:
    """Check a run of ledger entries in the §9 shape, in the order served (as
    :class:`reporters.files.Entry` objects, whose ``raw`` is checked, or as plain JSON).

    1. Every entry's ``id`` is ``BLAKE3(canonical JSON of the entry without "id")``
       (``BAD_ENTRY_ID``, path ``/i/id``).
    2. ``seq`` increases strictly along the list (``BROKEN_CHAIN``, ``/i/seq``).
    3. The entry with ``seq`` 1 has ``prev`` = 64 zeros, and wherever two listed entries
       have consecutive seqs the later one's ``prev`` is the earlier one's ``id``
       (``BROKEN_CHAIN``, ``/i/prev``). An agent's file is a subset of the ledger, so
       links across gaps cannot be checked here; a checkpoint covers those.
    """
    last: Mapping[str, Any] | None = None
    for i, item in enumerate(entries):
        entry = item.raw if isinstance(item, Entry) else item
        if not isinstance(entry, Mapping):
            raise VerificationError("BROKEN_CHAIN", f"/{i}", "an entry is a JSON object")
        seq, prev, given = entry.get("seq"), entry.get("prev"), entry.get("id")
        if type(seq) is not int or not isinstance(prev, str) or not isinstance(given, str):
            raise VerificationError("BROKEN_CHAIN", f"/{i}",
                                    "an entry has an integer seq and string id and prev")
        try:
            computed = wire.entry_id({k: v for k, v in entry.items() if k != "id"})
        except (TypeError, wire.WireError) as exc:
            raise VerificationError("BAD_ENTRY_ID", f"/{i}", f"not canonical JSON: {exc}") \
                from None
        if computed != given:
            raise VerificationError("BAD_ENTRY_ID", f"/{i}/id",
                                    f"entry {seq} hashes to {computed}, not {given}")
        if last is not None and seq <= last["seq"]:
            raise VerificationError("BROKEN_CHAIN", f"/{i}/seq",
                                    f"seq {seq} follows seq {last['seq']}")
        if seq == 1 and prev != wire.ZERO_ID:
            raise VerificationError("BROKEN_CHAIN", f"/{i}/prev",
                                    "the first entry's prev is 64 zeros")
        if last is not None and seq == last["seq"] + 1 and prev != last["id"]:
            raise VerificationError("BROKEN_CHAIN", f"/{i}/prev",
                                    f"entry {seq} does not link to entry {last['seq']}")
        last = entry


def _report_position(doc: Mapping[str, Any]) -> Any:
    ledger = doc.get("ledger")
    return ledger.get("seq") if isinstance(ledger, Mapping) else None


def _checkpoint_position(doc: Mapping[str, Any]) -> Any:
    return doc.get("seq")


def verify_report(envelope: Mapping[str, Any], bureau_key: str | KeyHistory) -> dict[str, Any]:
    """Check a bureau-signed report envelope and return its payload (SPEC §8).

    1. ``payloadType`` is ``application/vnd.bureau.report.v1+json``
       (``UNKNOWN_PAYLOAD_TYPE``).
    2. Exactly one signature (``SIGNATURE_COUNT``), by ``bureau_key`` — a key id, or a
       key of the bureau's :class:`KeyHistory` (``BAD_KEY`` when it names another key,
       one never the ledger's, or the key id is not a valid Ed25519 key).
    3. ``payload`` and ``sig`` are canonical padded base64 (``MALFORMED_ENVELOPE``).
    4. The Ed25519 signature over DSSE's PAE verifies (``BAD_SIGNATURE``).
    5. The payload is a JSON object (``MALFORMED_PAYLOAD``).
    6. With a history: the key is the one in force at the report's ``ledger.seq``
       (``BAD_KEY``; ``MALFORMED_PAYLOAD`` when it names no seq).

    Get ``bureau_key`` from ``GET /v1/bureau`` once, out of band, and keep it (or the
    history: ``KeyHistory.from_bureau``).
    """
    return _verify_envelope(envelope, bureau_key, REPORT_TYPE, "report", _report_position)


def verify_checkpoint(envelope: Mapping[str, Any],
                      bureau_key: str | KeyHistory) -> dict[str, Any]:
    """Check a bureau-signed epoch checkpoint envelope (``GET /v1/checkpoints/{epoch}``)
    and return its payload ``{"epoch", "seq", "head", "entries", "root"}`` (SPEC §8):
    the steps and codes of :func:`verify_report`, with the payload type
    ``application/vnd.bureau.checkpoint.v1+json`` and, with a history, the key in
    force at its ``seq``."""
    return _verify_envelope(envelope, bureau_key, CHECKPOINT_TYPE, "checkpoint",
                            _checkpoint_position)


def verify_card_statement(envelope: Mapping[str, Any], bureau_key: str) -> dict[str, Any]:
    """Check the signed statement of a reputation card (docs/transparency.md, "Proof
    bundles and cards") and return its payload: the steps and codes of
    :func:`verify_report`, with the payload type ``application/vnd.bureau.card.v1+json``
    and the key id ``bureau_key``."""
    return _verify_envelope(envelope, bureau_key, CARD_TYPE, "card", _report_position)


def _signing_key(signature: Any, bureau_key: str | KeyHistory, what: str) -> str:
    """Step 2: the key id the signature names, if it may sign at all."""
    named = signature.get("keyid") if isinstance(signature, Mapping) else None
    if isinstance(bureau_key, KeyHistory):
        if not isinstance(named, str) or bureau_key.with_key_id(named) is None:
            raise VerificationError("BAD_KEY", "/signatures/0/keyid",
                                    f"the {what} is signed by a key that was never the "
                                    "ledger's")
        return named
    if named != bureau_key:
        raise VerificationError("BAD_KEY", "/signatures/0/keyid",
                                f"the {what} is not signed by the bureau's key")
    return bureau_key


def _verify_envelope(envelope: Mapping[str, Any], bureau_key: str | KeyHistory, ptype: str,
                     what: str, position: Callable[[Mapping[str, Any]], Any]
                     ) -> dict[str, Any]:
    if not isinstance(envelope, Mapping):
        raise VerificationError("MALFORMED_ENVELOPE", "", "an envelope is a JSON object")
    if envelope.get("payloadType") != ptype:
        raise VerificationError("UNKNOWN_PAYLOAD_TYPE", "/payloadType",
                                f"a {what}'s payloadType is {ptype}")
    signatures = envelope.get("signatures")
    if not isinstance(signatures, list) or len(signatures) != 1:
        raise VerificationError("SIGNATURE_COUNT", "/signatures", "exactly one signature")
    signature = signatures[0]
    key_id = _signing_key(signature, bureau_key, what)
    try:
        public_key = wire.public_key_from_key_id(key_id)
    except wire.WireError as exc:
        raise VerificationError("BAD_KEY", "/signatures/0/keyid", exc.detail) from None
    payload_text, sig_text = envelope.get("payload"), signature.get("sig")
    try:
        if not isinstance(payload_text, str) or not isinstance(sig_text, str):
            raise wire.WireError("base64", "payload and sig are base64 strings")
        body = wire.b64decode_canonical(payload_text)
        sig = wire.b64decode_canonical(sig_text)
    except wire.WireError as exc:
        raise VerificationError("MALFORMED_ENVELOPE", "", exc.detail) from None
    if not wire.verify_signature(public_key, ptype, body, sig):
        raise VerificationError("BAD_SIGNATURE", "/signatures/0/sig",
                                "the signature does not verify")
    try:
        doc = strictjson.loads(body)
    except strictjson.StrictJSONError as exc:
        raise VerificationError("MALFORMED_PAYLOAD", "/payload", str(exc)) from None
    if not isinstance(doc, dict):
        raise VerificationError("MALFORMED_PAYLOAD", "/payload", f"a {what} is a JSON object")
    if isinstance(bureau_key, KeyHistory):
        _in_force(bureau_key, key_id, position(doc), what)
    return doc


def _in_force(history: KeyHistory, key_id: str, seq: Any, what: str) -> None:
    """Step 6: a key of the history signs only where it is in force."""
    if type(seq) is not int or seq < 1:
        raise VerificationError("MALFORMED_PAYLOAD", "/payload",
                                f"the {what} names no ledger seq")
    expected = history.at(seq)
    if expected.key_id != key_id:
        raise VerificationError("BAD_KEY", "/signatures/0/keyid",
                                f"the {what} at seq {seq} is signed by {key_id}, but the key "
                                f"in force there is {expected.key_id} (from seq "
                                f"{expected.from_seq})")
