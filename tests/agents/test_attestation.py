"""Attestations: witnessed by a reporter's fact, from an enrolled caller, one verdict per
evaluator per interaction (SPEC §5)."""

from __future__ import annotations

import json

from reporters import wire
from tests.agents.support import (
    attestation,
    enroll,
    interaction_id,
    refused,
    stored_entries,
    stored_refusals,
    witness,
)
from tests.support import BureauUnderTest, fact_payload, kid


async def test_attestation_matching_the_reporters_fact_is_accepted(
        bureau: BureauUnderTest) -> None:
    rep = await bureau.reporter()
    seller, buyer = await enroll(bureau), await enroll(bureau)
    ia = await witness(bureau, rep, seller, buyer)
    body = await bureau.accepted(buyer, "attestation", attestation(rep, ia, seller))
    [entry] = [e for e in await stored_entries(bureau) if e.id == body["id"]]
    assert (entry.kind, entry.signer, entry.subject) == ("attestation", kid(buyer), kid(seller))


async def test_attestation_without_a_fact_is_unwitnessed(bureau: BureauUnderTest) -> None:
    rep = await bureau.reporter()
    seller, buyer = await enroll(bureau), await enroll(bureau)
    assert await refused(bureau, buyer, "attestation",
                         attestation(rep, interaction_id(), seller)) == (
        "UNWITNESSED", "/interaction")


async def test_attestation_naming_another_reporter_is_unwitnessed(
        bureau: BureauUnderTest) -> None:
    rep, other_rep = await bureau.reporter(), await bureau.reporter()
    seller, buyer = await enroll(bureau), await enroll(bureau)
    ia = await witness(bureau, rep, seller, buyer)
    code, _ = await refused(bureau, buyer, "attestation", attestation(other_rep, ia, seller))
    assert code == "UNWITNESSED"


async def test_attestation_about_another_subject_is_unwitnessed(
        bureau: BureauUnderTest) -> None:
    rep = await bureau.reporter()
    seller, other, buyer = await enroll(bureau), await enroll(bureau), await enroll(bureau)
    ia = await witness(bureau, rep, seller, buyer)
    assert await refused(bureau, buyer, "attestation", attestation(rep, ia, other)) == (
        "UNWITNESSED", "/interaction")


async def test_unwitnessed_attestations_are_byte_identical_whatever_failed_to_match(
        bureau: BureauUnderTest) -> None:
    """SPEC §5 r2, the oracle finding of issue 12: a signer probing someone else's
    interaction learns nothing from the refusal — no such fact, a fact about another
    subject, a fact with another caller all get the very same bytes back."""
    rep = await bureau.reporter()
    seller, buyer, prober = await enroll(bureau), await enroll(bureau), await enroll(bureau)
    ia = await witness(bureau, rep, seller, buyer)  # seller served buyer: not the prober's
    mine = await witness(bureau, rep, seller, prober)  # the prober's own, with the seller
    cases = {
        "no such fact": attestation(rep, interaction_id(), seller),
        "another subject": attestation(rep, mine, buyer),
        "another caller": attestation(rep, ia, seller),
    }
    bodies = {}
    for case, payload in cases.items():
        async with bureau.session.post(
                bureau.url + "/v1/evidence", data=json.dumps(wire.sign_payload(
                    prober, "attestation", payload)).encode(),
                headers={"Content-Type": "application/json"}) as resp:
            assert resp.status == 422, case
            bodies[case] = await resp.read()
    assert len(set(bodies.values())) == 1, bodies
    body = json.loads(bodies["no such fact"])
    assert (body["code"], body["path"]) == ("UNWITNESSED", "/interaction")


async def test_attestation_from_someone_other_than_the_caller_is_unwitnessed(
        bureau: BureauUnderTest) -> None:
    rep = await bureau.reporter()
    seller, buyer, bystander = await enroll(bureau), await enroll(bureau), await enroll(bureau)
    ia = await witness(bureau, rep, seller, buyer)
    code, _ = await refused(bureau, bystander, "attestation", attestation(rep, ia, seller))
    assert code == "UNWITNESSED"


async def test_attestation_on_a_fact_with_no_caller_is_unwitnessed(
        bureau: BureauUnderTest) -> None:
    rep = await bureau.reporter()
    seller, buyer = await enroll(bureau), await enroll(bureau)
    ia = await witness(bureau, rep, seller, None)
    code, _ = await refused(bureau, buyer, "attestation", attestation(rep, ia, seller))
    assert code == "UNWITNESSED"


async def test_attestation_from_an_unenrolled_caller_is_not_enrolled(
        bureau: BureauUnderTest) -> None:
    rep = await bureau.reporter()
    seller, buyer = await enroll(bureau), wire.generate_key()
    ia = await witness(bureau, rep, seller, buyer)
    assert await refused(bureau, buyer, "attestation", attestation(rep, ia, seller)) == (
        "NOT_ENROLLED", "")


async def test_attestation_about_an_unenrolled_subject_is_accepted(
        bureau: BureauUnderTest) -> None:
    rep = await bureau.reporter()
    seller, buyer = wire.generate_key(), await enroll(bureau)
    ia = await witness(bureau, rep, seller, buyer)
    await bureau.accepted(buyer, "attestation", attestation(rep, ia, seller))


async def test_a_fact_and_its_attestation_in_one_batch_are_both_accepted(
        bureau: BureauUnderTest) -> None:
    rep = await bureau.reporter()
    seller, buyer = await enroll(bureau), await enroll(bureau)
    ia = interaction_id()
    results = await bureau.batch([
        wire.sign_payload(rep, "fact", fact_payload(ia, kid(seller), kid(buyer))),
        wire.sign_payload(buyer, "attestation", attestation(rep, ia, seller)),
    ])
    assert [r["status"] for r in results] == ["accepted", "accepted"]
    assert results[1]["seq"] == results[0]["seq"] + 1


async def test_an_attestation_ahead_of_its_fact_in_a_batch_is_unwitnessed(
        bureau: BureauUnderTest) -> None:
    rep = await bureau.reporter()
    seller, buyer = await enroll(bureau), await enroll(bureau)
    ia = interaction_id()
    results = await bureau.batch([
        wire.sign_payload(buyer, "attestation", attestation(rep, ia, seller)),
        wire.sign_payload(rep, "fact", fact_payload(ia, kid(seller), kid(buyer))),
    ])
    assert [(r["status"], r.get("code")) for r in results] == [
        ("rejected", "UNWITNESSED"), ("accepted", None)]


# --------------------------------------------------------------------------- one verdict


async def test_the_same_attestation_again_is_a_duplicate(bureau: BureauUnderTest) -> None:
    rep = await bureau.reporter()
    seller, buyer = await enroll(bureau), await enroll(bureau)
    ia = await witness(bureau, rep, seller, buyer)
    env = wire.sign_payload(buyer, "attestation", attestation(rep, ia, seller))
    status, first = await bureau.post(env)
    assert status == 201
    status, again = await bureau.post(env)
    assert (status, again) == (200, {**first, "status": "duplicate"})


async def test_a_different_second_attestation_is_duplicate_verdict_and_kept(
        bureau: BureauUnderTest) -> None:
    rep = await bureau.reporter()
    seller, buyer = await enroll(bureau), await enroll(bureau)
    ia = await witness(bureau, rep, seller, buyer)
    await bureau.accepted(buyer, "attestation", attestation(rep, ia, seller))
    changed = attestation(rep, ia, seller, "FAILED_DISCOVERED")
    assert await refused(bureau, buyer, "attestation", changed) == (
        "DUPLICATE_VERDICT", "/interaction")
    assert (kid(buyer), "DUPLICATE_VERDICT") in await stored_refusals(bureau)
    attestations = [e for e in await stored_entries(bureau)
                    if e.kind == "attestation" and e.signer == kid(buyer)]
    assert [e.payload["outcome"] for e in attestations] == ["ACCEPTED"]


async def test_two_different_attestations_in_one_batch_keep_the_first(
        bureau: BureauUnderTest) -> None:
    rep = await bureau.reporter()
    seller, buyer = await enroll(bureau), await enroll(bureau)
    ia = await witness(bureau, rep, seller, buyer)
    results = await bureau.batch([
        wire.sign_payload(buyer, "attestation", attestation(rep, ia, seller)),
        wire.sign_payload(buyer, "attestation", attestation(rep, ia, seller, "DECLINED")),
    ])
    assert [(r["status"], r.get("code")) for r in results] == [
        ("accepted", None), ("rejected", "DUPLICATE_VERDICT")]
