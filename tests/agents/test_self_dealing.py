"""Self-dealing: evaluator and subject share an operator or an anchor (SPEC §5), refused
at admission, and excluded retroactively when an enrollment or amendment reveals it."""

from __future__ import annotations

import asyncio

import pytest

from reporters import wire
from tests.agents.support import (
    Key,
    StoredEntry,
    attestation,
    engagement,
    enroll,
    enrollment,
    interaction_id,
    refused,
    stored_entries,
    stored_refusals,
    value_judgment,
    witness,
)
from tests.support import BureauUnderTest, fact_payload, issued, kid

Anchor = tuple[str, str]


async def _attest(bureau: BureauUnderTest, rep: Key, seller: Key,
                  buyer: Key) -> tuple[int, dict[str, object]]:
    ia = await witness(bureau, rep, seller, buyer)
    return await bureau.submit(buyer, "attestation", attestation(rep, ia, seller))


async def _exclusions_of(bureau: BureauUnderTest, *targets: str) -> list[StoredEntry]:
    return [e for e in await stored_entries(bureau)
            if e.kind == "exclusion" and e.body["entry"] in targets]


# --------------------------------------------------------------------------- at admission


async def test_shared_operator_trimmed_and_lowercased_is_self_dealing(
        bureau: BureauUnderTest) -> None:
    rep = await bureau.reporter()
    seller = await enroll(bureau, operator=" ACME ")
    buyer = await enroll(bureau, operator="acme")
    ia = await witness(bureau, rep, seller, buyer)
    assert await refused(bureau, buyer, "attestation", attestation(rep, ia, seller)) == (
        "SELF_DEALING", "/subject")
    assert (kid(buyer), "SELF_DEALING") in await stored_refusals(bureau)


LINKED_ANCHORS = [
    pytest.param(("email", "Sam@Acme.com"), ("email", "sam@acme.COM"), id="email=email"),
    pytest.param(("domain", "ACME.com"), ("domain", "acme.com"), id="domain=domain"),
    pytest.param(("email", "sam@Acme.com"), ("domain", "acme.COM"), id="email-in-domain"),
    pytest.param(("domain", "acme.com"), ("email", "kim@ACME.com"), id="domain-has-email"),
]

UNLINKED_ANCHORS = [
    pytest.param(("email", "sam@acme.com"), ("email", "kim@acme.com"),
                 id="two-emails-same-domain"),
    pytest.param(("domain", "acme.com"), ("domain", "acme.org"), id="two-domains"),
    pytest.param(("email", "sam@mail.acme.com"), ("domain", "acme.com"),
                 id="email-in-subdomain"),
    pytest.param(("email", "sam@acme.com"), ("email", "sam@acme.org"),
                 id="same-local-part"),
]


@pytest.mark.parametrize(("seller_anchor", "buyer_anchor"), LINKED_ANCHORS)
async def test_shared_anchor_is_self_dealing(bureau: BureauUnderTest, seller_anchor: Anchor,
                                             buyer_anchor: Anchor) -> None:
    rep = await bureau.reporter()
    seller = await enroll(bureau, anchor=seller_anchor)
    buyer = await enroll(bureau, anchor=buyer_anchor)
    status, body = await _attest(bureau, rep, seller, buyer)
    assert (status, body["code"]) == (422, "SELF_DEALING")


@pytest.mark.parametrize(("seller_anchor", "buyer_anchor"), UNLINKED_ANCHORS)
async def test_anchors_that_do_not_match_are_not_self_dealing(
        bureau: BureauUnderTest, seller_anchor: Anchor, buyer_anchor: Anchor) -> None:
    rep = await bureau.reporter()
    seller = await enroll(bureau, anchor=seller_anchor)
    buyer = await enroll(bureau, anchor=buyer_anchor)
    status, body = await _attest(bureau, rep, seller, buyer)
    assert status == 201, body


async def test_attesting_yourself_is_self_dealing(bureau: BureauUnderTest) -> None:
    rep = await bureau.reporter()
    agent = await enroll(bureau)
    status, body = await _attest(bureau, rep, agent, agent)
    assert (status, body["code"]) == (422, "SELF_DEALING")


async def test_value_judgment_between_linked_agents_is_self_dealing(
        bureau: BureauUnderTest) -> None:
    rep = await bureau.reporter()
    seller = await enroll(bureau, anchor=("domain", "initech.io"))
    buyer = await enroll(bureau, anchor=("email", "bill@initech.io"))
    await bureau.accepted(rep, "fact", fact_payload(
        interaction_id(), kid(seller), kid(buyer), engagement=engagement("eng-sd")))
    assert await refused(bureau, buyer, "value-judgment",
                         value_judgment(rep, "eng-sd", seller)) == ("SELF_DEALING", "/subject")


# --------------------------------------------------------------------------- retroactive


async def test_subject_enrolling_with_the_evaluators_operator_excludes_the_attestation(
        bureau: BureauUnderTest) -> None:
    rep = await bureau.reporter()
    buyer = await enroll(bureau, operator="Umbrella")
    seller = wire.generate_key()  # not enrolled yet: nothing to compare with
    status, att = await _attest(bureau, rep, seller, buyer)
    assert status == 201, att
    enrolled = await bureau.accepted(seller, "enrollment", enrollment(" umbrella"))

    [excl] = await _exclusions_of(bureau, str(att["id"]))
    assert excl.seq == enrolled["seq"] + 1
    assert excl.body == {"entry": att["id"], "reason": "self_dealing",
                         "cause": enrolled["id"]}
    assert excl.signer is None and "envelope" not in excl.doc
    assert excl.subject == kid(seller)  # the exclusion is about the excluded entry's subject


async def test_evaluator_amending_into_the_subjects_anchor_excludes_its_attestation(
        bureau: BureauUnderTest) -> None:
    rep = await bureau.reporter()
    seller = await enroll(bureau, anchor=("domain", "hooli.com"))
    buyer = await enroll(bureau, anchor=("email", "gavin@hooli.org"))
    status, att = await _attest(bureau, rep, seller, buyer)
    assert status == 201, att
    amended = await bureau.accepted(
        buyer, "amendment", {
            "issued_at": issued(), "anchor": {"kind": "email", "value": "gavin@HOOLI.com"}})

    [excl] = await _exclusions_of(bureau, str(att["id"]))
    assert excl.seq == amended["seq"] + 1
    assert excl.body == {"entry": att["id"], "reason": "self_dealing", "cause": amended["id"]}
    assert excl.subject == kid(seller)


async def test_subject_amending_excludes_every_tainted_verdict_right_after(
        bureau: BureauUnderTest) -> None:
    rep = await bureau.reporter()
    seller = await enroll(bureau, operator="Soylent")
    ring = [await enroll(bureau, operator="Tyrell") for _ in range(2)]
    honest = await enroll(bureau, operator="Wayne")
    ids = []
    for buyer in [*ring, honest]:
        status, att = await _attest(bureau, rep, seller, buyer)
        assert status == 201, att
        ids.append(str(att["id"]))
    await bureau.accepted(rep, "fact", fact_payload(
        interaction_id(), kid(seller), kid(ring[0]), engagement=engagement("eng-ring")))
    vj = await bureau.accepted(ring[0], "value-judgment",
                               value_judgment(rep, "eng-ring", seller))

    amended = await bureau.accepted(seller, "amendment", {
        "issued_at": issued(), "operator": "TYRELL"})

    excl = await _exclusions_of(bureau, *ids, vj["id"])
    assert [e.seq for e in excl] == [amended["seq"] + 1, amended["seq"] + 2,
                                     amended["seq"] + 3]
    assert sorted(e.body["entry"] for e in excl) == sorted([ids[0], ids[1], vj["id"]])
    assert {(e.body["reason"], e.body["cause"]) for e in excl} == {
        ("self_dealing", amended["id"])}


async def test_a_second_amendment_revealing_the_same_link_excludes_nothing_new(
        bureau: BureauUnderTest) -> None:
    rep = await bureau.reporter()
    seller = await enroll(bureau, operator="Cyberdyne", anchor=("domain", "cyberdyne.com"))
    buyer = await enroll(bureau)
    status, att = await _attest(bureau, rep, seller, buyer)
    assert status == 201, att
    await bureau.accepted(buyer, "amendment", {"issued_at": issued(), "operator": "cyberdyne"})
    again = await bureau.accepted(
        buyer, "amendment", {
            "issued_at": issued(), "anchor": {"kind": "email", "value": "miles@cyberdyne.com"}})
    renamed = await bureau.accepted(buyer, "amendment", {
        "issued_at": issued(), "name": "still linked"})

    assert len(await _exclusions_of(bureau, str(att["id"]))) == 1
    assert renamed["seq"] == again["seq"] + 1  # nothing appended after either


async def test_an_enrollment_revealing_no_link_appends_nothing(
        bureau: BureauUnderTest) -> None:
    rep = await bureau.reporter()
    buyer = await enroll(bureau, operator="Oscorp", anchor=("email", "norman@oscorp.com"))
    seller = wire.generate_key()
    status, att = await _attest(bureau, rep, seller, buyer)
    assert status == 201, att
    await bureau.accepted(seller, "enrollment",
                          enrollment("Stark", ("email", "tony@stark.com")))
    assert await _exclusions_of(bureau, str(att["id"])) == []


async def test_an_attestation_and_the_revealing_enrollment_in_one_batch(
        bureau: BureauUnderTest) -> None:
    rep = await bureau.reporter()
    buyer = await enroll(bureau, anchor=("domain", "vandelay.com"))
    seller = wire.generate_key()
    ia = await witness(bureau, rep, seller, buyer)
    results = await bureau.batch([
        wire.sign_payload(buyer, "attestation", attestation(rep, ia, seller)),
        wire.sign_payload(seller, "enrollment",
                          enrollment(anchor=("email", "art@vandelay.com"))),
    ])
    assert [r["status"] for r in results] == ["accepted", "accepted"]
    [excl] = await _exclusions_of(bureau, results[0]["id"])
    assert excl.seq == results[1]["seq"] + 1
    assert excl.body["cause"] == results[1]["id"]
    assert excl.subject == kid(seller)


async def test_once_linked_a_new_attestation_is_refused(bureau: BureauUnderTest) -> None:
    rep = await bureau.reporter()
    seller = await enroll(bureau, operator="Massive Dynamic")
    buyer = await enroll(bureau)
    status, _ = await _attest(bureau, rep, seller, buyer)
    assert status == 201
    await bureau.accepted(buyer, "amendment", {
        "issued_at": issued(), "operator": "massive dynamic "})
    status, body = await _attest(bureau, rep, seller, buyer)
    assert (status, body["code"]) == (422, "SELF_DEALING")


async def test_racing_an_attestation_against_the_revealing_enrollment_never_leaves_it_counted(
        bureau: BureauUnderTest) -> None:
    """Sent as separate concurrent requests, either order is fine: refused as
    SELF_DEALING, or admitted and then excluded. Never admitted and left counted."""
    rep = await bureau.reporter()
    pairs = []
    for n in range(6):
        buyer = await enroll(bureau, operator=f"Race Co {n}")
        seller = wire.generate_key()
        ia = await witness(bureau, rep, seller, buyer)
        pairs.append((seller, buyer, ia, n))
    outcomes = await asyncio.gather(*(
        coro for seller, buyer, ia, n in pairs for coro in (
            bureau.submit(buyer, "attestation", attestation(rep, ia, seller)),
            bureau.submit(seller, "enrollment", enrollment(f"RACE CO {n}")))))
    excluded = {e.body["entry"] for e in await stored_entries(bureau, "exclusion")}
    for (status, att), (enrolled_status, _) in zip(outcomes[::2], outcomes[1::2], strict=True):
        assert enrolled_status == 201
        if status == 422:
            assert att["code"] == "SELF_DEALING"
        else:
            assert status == 201 and att["id"] in excluded
