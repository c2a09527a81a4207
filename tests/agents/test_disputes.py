"""Disputes by the agent an entry is about, and their resolution by an admin (SPEC §3)."""

from __future__ import annotations

import secrets
from typing import Any

from reporters import wire
from tests.agents.support import (
    Key,
    attestation,
    enroll,
    head_seq,
    refused,
    stored_entries,
    witness,
)
from tests.support import BureauUnderTest, fact_payload, kid


def dispute(entry_id: str, reason: str = "that is not what happened") -> dict[str, Any]:
    return {"entry": entry_id, "reason": reason}


def resolution(dispute_id: str, decision: str, reason: str = "reviewed") -> dict[str, Any]:
    return {"dispute": dispute_id, "decision": decision, "reason": reason}


async def _attested(bureau: BureauUnderTest) -> tuple[Key, dict[str, Any]]:
    """An enrolled seller and an attestation about it (as its intake result)."""
    rep = await bureau.reporter()
    seller, buyer = await enroll(bureau), await enroll(bureau)
    ia = await witness(bureau, rep, seller, buyer)
    body = await bureau.accepted(buyer, "attestation",
                                 attestation(rep, ia, seller, "FAILED_DISCOVERED"))
    return seller, body


async def test_the_subject_may_dispute_an_attestation_about_it(
        bureau: BureauUnderTest) -> None:
    seller, att = await _attested(bureau)
    body = await bureau.accepted(seller, "dispute", dispute(att["id"]))
    [entry] = [e for e in await stored_entries(bureau) if e.id == body["id"]]
    assert (entry.kind, entry.signer, entry.payload["entry"]) == (
        "dispute", kid(seller), att["id"])


async def test_the_subject_may_dispute_a_fact_about_it(bureau: BureauUnderTest) -> None:
    rep = await bureau.reporter()
    seller = await enroll(bureau)
    fact = await bureau.accepted(rep, "fact", fact_payload("ia-disputed", kid(seller)))
    await bureau.accepted(seller, "dispute", dispute(fact["id"]))


async def test_disputing_an_entry_about_someone_else_is_not_subject(
        bureau: BureauUnderTest) -> None:
    _, att = await _attested(bureau)
    meddler = await enroll(bureau)
    assert await refused(bureau, meddler, "dispute", dispute(att["id"])) == (
        "NOT_SUBJECT", "/entry")


async def test_the_evaluator_may_not_dispute_its_own_attestation(
        bureau: BureauUnderTest) -> None:
    rep = await bureau.reporter()
    seller, buyer = await enroll(bureau), await enroll(bureau)
    ia = await witness(bureau, rep, seller, buyer)
    att = await bureau.accepted(buyer, "attestation", attestation(rep, ia, seller))
    code, _ = await refused(bureau, buyer, "dispute", dispute(att["id"]))
    assert code == "NOT_SUBJECT"


async def test_disputing_an_entry_that_does_not_exist_is_unknown_entry(
        bureau: BureauUnderTest) -> None:
    agent = await enroll(bureau)
    assert await refused(bureau, agent, "dispute", dispute(secrets.token_hex(32))) == (
        "UNKNOWN_ENTRY", "/entry")


async def test_a_dispute_from_an_unenrolled_key_is_not_enrolled(
        bureau: BureauUnderTest) -> None:
    rep = await bureau.reporter()
    seller = wire.generate_key()
    fact = await bureau.accepted(rep, "fact", fact_payload("ia-unenrolled", kid(seller)))
    assert await refused(bureau, seller, "dispute", dispute(fact["id"])) == (
        "NOT_ENROLLED", "")


async def test_a_resolution_not_signed_by_an_admin_is_not_admin(
        bureau: BureauUnderTest) -> None:
    seller, att = await _attested(bureau)
    d = await bureau.accepted(seller, "dispute", dispute(att["id"]))
    assert await refused(bureau, seller, "resolution", resolution(d["id"], "EXCLUDED")) == (
        "NOT_ADMIN", "")


async def test_upheld_appends_only_the_resolution(bureau: BureauUnderTest) -> None:
    seller, att = await _attested(bureau)
    d = await bureau.accepted(seller, "dispute", dispute(att["id"]))
    r = await bureau.accepted(bureau.admin, "resolution", resolution(d["id"], "UPHELD"))
    assert r["seq"] == d["seq"] + 1
    assert await head_seq(bureau) == r["seq"]
    assert not [e for e in await stored_entries(bureau)
                if e.kind == "exclusion" and e.body["entry"] == att["id"]]


async def test_excluded_appends_an_exclusion_of_the_disputed_entry(
        bureau: BureauUnderTest) -> None:
    seller, att = await _attested(bureau)
    d = await bureau.accepted(seller, "dispute", dispute(att["id"]))
    r = await bureau.accepted(bureau.admin, "resolution", resolution(d["id"], "EXCLUDED"))
    assert await head_seq(bureau) == r["seq"] + 1
    [excl] = [e for e in await stored_entries(bureau) if e.seq == r["seq"] + 1]
    assert excl.kind == "exclusion"
    assert excl.body == {"entry": att["id"], "reason": "disputed", "cause": r["id"]}
    assert excl.subject == kid(seller)


async def test_resolving_a_dispute_again_is_already_resolved(bureau: BureauUnderTest) -> None:
    seller, att = await _attested(bureau)
    d = await bureau.accepted(seller, "dispute", dispute(att["id"]))
    first = wire.sign_payload(bureau.admin, "resolution", resolution(d["id"], "UPHELD"))
    status, body = await bureau.post(first)
    assert status == 201, body
    status, again = await bureau.post(first)
    assert (status, again) == (200, {**body, "status": "duplicate"})
    assert await refused(bureau, bureau.admin, "resolution",
                         resolution(d["id"], "EXCLUDED")) == ("ALREADY_RESOLVED", "/dispute")


async def test_resolving_an_entry_that_is_not_a_dispute_is_unknown_entry(
        bureau: BureauUnderTest) -> None:
    _, att = await _attested(bureau)
    assert await refused(bureau, bureau.admin, "resolution",
                         resolution(att["id"], "EXCLUDED")) == ("UNKNOWN_ENTRY", "/dispute")
    assert await refused(bureau, bureau.admin, "resolution",
                         resolution(secrets.token_hex(32), "UPHELD")) == (
        "UNKNOWN_ENTRY", "/dispute")


async def test_excluding_an_entry_already_excluded_appends_no_second_exclusion(
        bureau: BureauUnderTest) -> None:
    rep = await bureau.reporter()
    buyer = await enroll(bureau, operator="Hooli")
    seller = wire.generate_key()
    ia = await witness(bureau, rep, seller, buyer)
    att = await bureau.accepted(buyer, "attestation", attestation(rep, ia, seller))
    await bureau.accepted(seller, "enrollment", {
        "name": "seller", "anchor": {"kind": "domain", "value": "pied.example"},
        "operator": "HOOLI", "promises": []})  # reveals self-dealing: excluded
    d = await bureau.accepted(seller, "dispute", dispute(att["id"]))
    r = await bureau.accepted(bureau.admin, "resolution", resolution(d["id"], "EXCLUDED"))
    assert await head_seq(bureau) == r["seq"]
    excl = [e for e in await stored_entries(bureau)
            if e.kind == "exclusion" and e.body["entry"] == att["id"]]
    assert [e.body["reason"] for e in excl] == ["self_dealing"]
