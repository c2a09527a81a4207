"""verify_chain and verify_report: pure checks, on entries and reports built here with
the wire module, and on a chain the real bureau wrote."""

from __future__ import annotations

import copy
import json
from typing import Any

import asyncpg
import pytest

import reporters
from reporters import wire
from tests.support import BureauUnderTest, fact_payload


def chain(n: int) -> list[dict[str, Any]]:
    """``n`` entries as the bureau serves them (§9), linked from the first."""
    key = reporters.generate_key()
    out: list[dict[str, Any]] = []
    prev = wire.ZERO_ID
    for seq in range(1, n + 1):
        entry: dict[str, Any] = {
            "seq": seq, "prev": prev, "kind": "withdrawal",
            "recorded_at": f"2026-11-29T23:00:0{seq % 10}.000000Z", "epoch": 93_000,
            "envelope": wire.sign_payload(key, "withdrawal", {"reason": f"r{seq}"})}
        entry_id = wire.entry_id(entry)
        out.append({**entry, "id": entry_id})
        prev = entry_id
    return out


def rehash(entry: dict[str, Any]) -> None:
    entry["id"] = wire.entry_id({k: v for k, v in entry.items() if k != "id"})


def refused(entries: list[dict[str, Any]]) -> tuple[str, str]:
    with pytest.raises(reporters.VerificationError) as info:
        reporters.verify_chain(entries)
    assert info.value.status is None
    return info.value.code, info.value.path


def test_a_good_chain_and_any_subset_of_it_verify() -> None:
    entries = chain(6)
    reporters.verify_chain(entries)
    reporters.verify_chain([entries[0], entries[2], entries[3], entries[5]])  # an agent's file
    reporters.verify_chain([])


def test_a_changed_entry_no_longer_hashes_to_its_id() -> None:
    entries = chain(3)
    entries[1]["kind"] = "fact"
    assert refused(entries) == ("BAD_ENTRY_ID", "/1/id")
    entries = chain(3)
    entries[2]["id"] = "f" * 64
    assert refused(entries) == ("BAD_ENTRY_ID", "/2/id")


def test_consecutive_entries_must_link() -> None:
    entries = chain(4)
    entries[2]["prev"] = entries[0]["id"]
    rehash(entries[2])  # a self-consistent entry that links to the wrong predecessor
    assert refused(entries) == ("BROKEN_CHAIN", "/2/prev")


def test_the_first_entry_links_to_zeros_and_seqs_increase() -> None:
    entries = chain(3)
    entries[0]["prev"] = "1" * 64
    rehash(entries[0])
    assert refused(entries) == ("BROKEN_CHAIN", "/0/prev")
    entries = chain(3)
    assert refused([entries[1], entries[0]]) == ("BROKEN_CHAIN", "/1/seq")
    assert refused([entries[1], entries[1]]) == ("BROKEN_CHAIN", "/1/seq")


def test_malformed_entries_are_refused_not_crashed_on() -> None:
    entries = chain(2)
    del entries[1]["seq"]
    assert refused(entries)[0] == "BROKEN_CHAIN"
    entries = chain(2)
    entries[1]["epoch"] = float("nan")
    assert refused(entries) == ("BAD_ENTRY_ID", "/1")


async def test_the_chain_the_bureau_wrote_verifies(bureau: BureauUnderTest) -> None:
    gateway = await bureau.reporter(("facts",))
    subject = reporters.key_id(reporters.generate_key())
    for i in range(5):
        await bureau.accepted(gateway, "fact", fact_payload(f"v-{i}", subject))
    conn = await asyncpg.connect(bureau.database_url)
    try:
        rows = await conn.fetch("SELECT id, entry FROM entries ORDER BY seq")
    finally:
        await conn.close()
    served = [{**json.loads(row["entry"]), "id": row["id"]} for row in rows]
    assert len(served) == 7  # genesis, reporter, 5 facts
    reporters.verify_chain(served)
    reporters.verify_chain([e for e in served if e["kind"] == "fact"][::2])


REPORT = {"agent": "ed25519:" + "A" * 43, "epoch": 7, "score": None, "outcomes": {}}


def report_envelope(key: Any, payload: dict[str, Any] = REPORT) -> dict[str, Any]:
    return wire.sign_payload(key, "report", payload)


def report_refused(envelope: dict[str, Any], bureau_key_id: str) -> tuple[str, str]:
    with pytest.raises(reporters.VerificationError) as info:
        reporters.verify_report(envelope, bureau_key_id)
    return info.value.code, info.value.path


def test_verify_report_returns_the_signed_payload() -> None:
    key = reporters.generate_key()
    assert reporters.verify_report(report_envelope(key), reporters.key_id(key)) == REPORT


def test_verify_report_refusals() -> None:
    key = reporters.generate_key()
    kid = reporters.key_id(key)
    other = reporters.key_id(reporters.generate_key())
    good = report_envelope(key)

    assert report_refused(good, other) == ("BAD_KEY", "/signatures/0/keyid")
    assert report_refused(wire.sign_payload(key, "fact", REPORT), kid) == (
        "UNKNOWN_PAYLOAD_TYPE", "/payloadType")

    two = copy.deepcopy(good)
    two["signatures"].append(two["signatures"][0])
    assert report_refused(two, kid) == ("SIGNATURE_COUNT", "/signatures")

    tampered = copy.deepcopy(good)
    tampered["payload"] = wire.b64encode(wire.canonical_json({**REPORT, "epoch": 8}))
    assert report_refused(tampered, kid) == ("BAD_SIGNATURE", "/signatures/0/sig")

    forged = report_envelope(reporters.generate_key())
    forged["signatures"][0]["keyid"] = kid
    assert report_refused(forged, kid) == ("BAD_SIGNATURE", "/signatures/0/sig")

    unpadded = copy.deepcopy(good)
    unpadded["signatures"][0]["sig"] = unpadded["signatures"][0]["sig"].rstrip("=")
    assert report_refused(unpadded, kid)[0] == "MALFORMED_ENVELOPE"

    not_object = wire.sign_envelope(key, wire.payload_type("report"), b"[1]")
    assert report_refused(not_object, kid) == ("MALFORMED_PAYLOAD", "/payload")
