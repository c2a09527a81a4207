"""Enrollment, amendment and withdrawal: signed by the agent's own key (SPEC §3, §6)."""

from __future__ import annotations

import asyncpg

from reporters import wire
from tests.agents.support import attestation, enroll, enrollment, refused, stored_entries, witness
from tests.support import BureauUnderTest, issued, kid


async def _agent_row(bureau: BureauUnderTest, key: str) -> asyncpg.Record | None:
    conn = await asyncpg.connect(bureau.database_url)
    try:
        return await conn.fetchrow("SELECT * FROM agents WHERE key = $1", key)
    finally:
        await conn.close()


async def test_enrollment_makes_the_signing_key_the_agent(bureau: BureauUnderTest) -> None:
    key = wire.generate_key()
    body = await bureau.accepted(key, "enrollment", enrollment("Acme", ("domain", "acme.com")))
    row = await _agent_row(bureau, kid(key))
    assert row is not None
    assert (row["operator"], row["anchor_kind"], row["anchor_value"], row["withdrawn"]) == (
        "Acme", "domain", "acme.com", False)
    [entry] = [e for e in await stored_entries(bureau) if e.id == body["id"]]
    assert (entry.kind, entry.signer, entry.subject) == ("enrollment", kid(key), kid(key))


async def test_the_same_enrollment_again_is_a_duplicate(bureau: BureauUnderTest) -> None:
    key = wire.generate_key()
    env = wire.sign_payload(key, "enrollment", enrollment())
    status, first = await bureau.post(env)
    assert status == 201
    status, again = await bureau.post(env)
    assert (status, again) == (200, {**first, "status": "duplicate"})


async def test_a_second_enrollment_is_already_enrolled(bureau: BureauUnderTest) -> None:
    key = await enroll(bureau)
    assert await refused(bureau, key, "enrollment", enrollment()) == ("ALREADY_ENROLLED", "")


async def test_amendment_replaces_only_the_fields_it_names(bureau: BureauUnderTest) -> None:
    key = wire.generate_key()
    await bureau.accepted(key, "enrollment", enrollment("Acme", ("domain", "acme.com")))
    await bureau.accepted(key, "amendment", {"issued_at": issued(), "operator": "Globex"})
    row = await _agent_row(bureau, kid(key))
    assert row is not None
    assert (row["operator"], row["anchor_value"]) == ("Globex", "acme.com")
    await bureau.accepted(key, "amendment", {
        "issued_at": issued(), "anchor": {"kind": "email", "value": "a@b.org"}})
    row = await _agent_row(bureau, kid(key))
    assert row is not None
    assert (row["operator"], row["anchor_kind"], row["anchor_value"]) == (
        "Globex", "email", "a@b.org")


async def test_amendment_from_a_key_never_enrolled_is_not_enrolled(
        bureau: BureauUnderTest) -> None:
    stranger = wire.generate_key()
    assert await refused(bureau, stranger, "amendment", {
        "issued_at": issued(), "operator": "X"}) == (
        "NOT_ENROLLED", "")


async def test_withdrawal_from_a_key_never_enrolled_is_not_enrolled(
        bureau: BureauUnderTest) -> None:
    stranger = wire.generate_key()
    assert await refused(bureau, stranger, "withdrawal", {"reason": "bye"}) == (
        "NOT_ENROLLED", "")


async def test_withdrawal_marks_the_agent_withdrawn(bureau: BureauUnderTest) -> None:
    key = await enroll(bureau)
    await bureau.accepted(key, "withdrawal", {"reason": "retiring"})
    row = await _agent_row(bureau, kid(key))
    assert row is not None and row["withdrawn"] is True


async def test_a_withdrawn_key_re_enrolling_is_withdrawn(bureau: BureauUnderTest) -> None:
    key = await enroll(bureau)
    await bureau.accepted(key, "withdrawal", {"reason": "retiring"})
    assert await refused(bureau, key, "enrollment", enrollment()) == ("WITHDRAWN", "")


async def test_a_withdrawn_agent_amending_or_withdrawing_again_is_withdrawn(
        bureau: BureauUnderTest) -> None:
    key = await enroll(bureau)
    await bureau.accepted(key, "withdrawal", {"reason": "retiring"})
    assert await refused(bureau, key, "amendment", {
        "issued_at": issued(), "name": "back"}) == ("WITHDRAWN", "")
    assert await refused(bureau, key, "withdrawal", {"reason": "again"}) == ("WITHDRAWN", "")


async def test_a_withdrawn_agent_attesting_is_withdrawn(bureau: BureauUnderTest) -> None:
    rep = await bureau.reporter()
    seller, buyer = await enroll(bureau), await enroll(bureau)
    ia = await witness(bureau, rep, seller, buyer)
    await bureau.accepted(buyer, "withdrawal", {"reason": "retiring"})
    assert await refused(bureau, buyer, "attestation", attestation(rep, ia, seller)) == (
        "WITHDRAWN", "")


async def test_enrollment_and_withdrawal_in_one_batch(bureau: BureauUnderTest) -> None:
    key = wire.generate_key()
    results = await bureau.batch([
        wire.sign_payload(key, "enrollment", enrollment()),
        wire.sign_payload(key, "withdrawal", {"reason": "changed my mind"}),
        wire.sign_payload(key, "enrollment", enrollment()),
    ])
    assert [r["status"] for r in results] == ["accepted", "accepted", "rejected"]
    assert results[2]["code"] == "WITHDRAWN"
