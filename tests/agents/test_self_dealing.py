"""Self-dealing: evaluator and subject share an operator or an anchor (SPEC §5). A
favourable verdict between them is refused at admission, and excluded retroactively when
an enrollment or amendment reveals the link; an unfavourable one never is.

The comparison itself (normalisation, registrable domains) is tested as a pure module in
tests/intake/test_links.py; here it is seen through HTTP on a real bureau."""

from __future__ import annotations

import asyncio
import json

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


async def _attest(bureau: BureauUnderTest, rep: Key, seller: Key, buyer: Key,
                  outcome: str = "ACCEPTED") -> tuple[int, dict[str, object]]:
    ia = await witness(bureau, rep, seller, buyer)
    corrections = 1 if outcome == "ACCEPTED_AFTER_CORRECTIONS" else 0
    return await bureau.submit(buyer, "attestation",
                               attestation(rep, ia, seller, outcome, corrections))


async def _judge(bureau: BureauUnderTest, rep: Key, seller: Key, buyer: Key,
                 judgment: str) -> tuple[int, dict[str, object]]:
    eng = "eng-" + interaction_id()
    await bureau.accepted(rep, "fact", fact_payload(
        interaction_id(), kid(seller), kid(buyer), engagement=engagement(eng)))
    return await bureau.submit(buyer, "value-judgment",
                               value_judgment(rep, eng, seller, judgment=judgment))


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
    pytest.param(("email", "sam@mail.acme.com"), ("domain", "acme.com"),
                 id="email-in-subdomain"),
    pytest.param(("domain", "ci.acme.com"), ("domain", "acme.com"), id="subdomain"),
    pytest.param(("domain", "bücher.de"), ("email", "ops@XN--BCHER-KVA.de"),
                 id="u-label-and-a-label"),
    pytest.param(("domain", "ａｃｍｅ.com."), ("domain", "acme.com"),
                 id="fullwidth-and-trailing-dot"),
]

UNLINKED_ANCHORS = [
    pytest.param(("email", "sam@acme.com"), ("email", "kim@acme.com"),
                 id="two-emails-same-domain"),
    pytest.param(("domain", "acme.com"), ("domain", "acme.org"), id="two-domains"),
    pytest.param(("email", "sam@acme.com"), ("email", "sam@acme.org"),
                 id="same-local-part"),
    pytest.param(("domain", "a.github.io"), ("domain", "b.github.io"),
                 id="private-suffix-neighbours"),
    pytest.param(("domain", "co.uk"), ("domain", "acme.co.uk"), id="a-public-suffix"),
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


async def test_attesting_yourself_favourably_is_self_dealing(bureau: BureauUnderTest) -> None:
    rep = await bureau.reporter()
    agent = await enroll(bureau)
    status, body = await _attest(bureau, rep, agent, agent)
    assert (status, body["code"]) == (422, "SELF_DEALING")


async def test_operators_compared_after_nfkc_cf_and_white_space(
        bureau: BureauUnderTest) -> None:
    rep = await bureau.reporter()
    seller = await enroll(bureau, operator="ＵＭＢＲＥＬＬＡ\u200b  Corp")
    buyer = await enroll(bureau, operator="umbrella\u00a0corp")
    status, body = await _attest(bureau, rep, seller, buyer)
    assert (status, body["code"]) == (422, "SELF_DEALING")


FAVOURABLE = ["ACCEPTED", "ACCEPTED_AFTER_CORRECTIONS", "DECLINED"]
UNFAVOURABLE = ["FAILED_ADMITTED", "FAILED_DISCOVERED"]


@pytest.mark.parametrize("outcome", FAVOURABLE)
async def test_a_favourable_attestation_between_linked_agents_is_refused(
        bureau: BureauUnderTest, outcome: str) -> None:
    rep = await bureau.reporter()
    seller = await enroll(bureau, anchor=("domain", "tyrell.com"))
    buyer = await enroll(bureau, anchor=("email", "eldon@tyrell.com"))
    status, body = await _attest(bureau, rep, seller, buyer, outcome)
    assert (status, body["code"], body["path"]) == (422, "SELF_DEALING", "/subject")


@pytest.mark.parametrize("outcome", UNFAVOURABLE)
async def test_an_unfavourable_attestation_between_linked_agents_is_admitted(
        bureau: BureauUnderTest, outcome: str) -> None:
    """Against the linked evaluator's interest: evidence, not self-dealing."""
    rep = await bureau.reporter()
    seller = await enroll(bureau, operator="Tyrell", anchor=("domain", "tyrell.com"))
    buyer = await enroll(bureau, operator="TYRELL", anchor=("email", "eldon@tyrell.com"))
    status, body = await _attest(bureau, rep, seller, buyer, outcome)
    assert status == 201, body


@pytest.mark.parametrize("outcome", UNFAVOURABLE)
async def test_attesting_your_own_failure_is_admitted(bureau: BureauUnderTest,
                                                      outcome: str) -> None:
    rep = await bureau.reporter()
    agent = await enroll(bureau)
    status, body = await _attest(bureau, rep, agent, agent, outcome)
    assert status == 201, body


@pytest.mark.parametrize(("judgment", "refused_code"), [
    ("VALUE_OK", "SELF_DEALING"), ("VALUE_POOR", None)])
async def test_value_judgments_between_linked_agents(
        bureau: BureauUnderTest, judgment: str, refused_code: str | None) -> None:
    rep = await bureau.reporter()
    seller = await enroll(bureau, operator="Initech")
    buyer = await enroll(bureau, operator=" initech ")
    status, body = await _judge(bureau, rep, seller, buyer, judgment)
    if refused_code is None:
        assert status == 201, body
    else:
        assert (status, body["code"], body["path"]) == (422, refused_code, "/subject")


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


async def test_a_revealed_link_excludes_only_the_favourable_verdicts(
        bureau: BureauUnderTest) -> None:
    rep = await bureau.reporter()
    seller = await enroll(bureau, operator="Weyland")
    buyer = await enroll(bureau, operator="Yutani")
    favourable, unfavourable = [], []
    for outcome in [*FAVOURABLE, *UNFAVOURABLE]:
        status, att = await _attest(bureau, rep, seller, buyer, outcome)
        assert status == 201, att
        (favourable if outcome in FAVOURABLE else unfavourable).append(str(att["id"]))
    for judgment in ("VALUE_OK", "VALUE_POOR"):
        status, vj = await _judge(bureau, rep, seller, buyer, judgment)
        assert status == 201, vj
        (favourable if judgment == "VALUE_OK" else unfavourable).append(str(vj["id"]))

    amended = await bureau.accepted(seller, "amendment", {
        "issued_at": issued(), "operator": "weyland\u200b"})
    assert amended  # Weyland\u200b is not Yutani: nothing yet
    assert await _exclusions_of(bureau, *favourable, *unfavourable) == []
    amended = await bureau.accepted(seller, "amendment", {
        "issued_at": issued(), "operator": "ＹＵＴＡＮＩ"})

    excl = await _exclusions_of(bureau, *favourable, *unfavourable)
    assert [e.body["entry"] for e in excl] == favourable  # in the verdicts' order
    assert [e.seq for e in excl] == [amended["seq"] + 1 + i for i in range(len(favourable))]
    assert {e.body["cause"] for e in excl} == {amended["id"]}


async def test_a_subject_matching_its_critics_operator_erases_nothing(
        bureau: BureauUnderTest) -> None:
    """Self-erasure: a subject amends its operator, then its anchor, until it "matches"
    the evaluator who rated it badly. The bad ratings stay; nothing is appended."""
    rep = await bureau.reporter()
    subject = await enroll(bureau, operator="Bluff Inc", anchor=("domain", "bluff.example"))
    critic = await enroll(bureau, operator="Honest Callers",
                          anchor=("email", "critic@honest.example"))
    ids = []
    for outcome in UNFAVOURABLE:
        status, att = await _attest(bureau, rep, subject, critic, outcome)
        assert status == 201, att
        ids.append(str(att["id"]))
    status, vj = await _judge(bureau, rep, subject, critic, "VALUE_POOR")
    assert status == 201, vj
    ids.append(str(vj["id"]))

    first = await bureau.accepted(subject, "amendment", {
        "issued_at": issued(), "operator": "honest callers"})
    last = await bureau.accepted(subject, "amendment", {
        "issued_at": issued(), "anchor": {"kind": "domain", "value": "honest.example"}})
    assert last["seq"] == first["seq"] + 1
    assert await _exclusions_of(bureau, *ids) == []
    # and from now on its critic can still say it failed, never that it did well
    status, att = await _attest(bureau, rep, subject, critic, "FAILED_DISCOVERED")
    assert status == 201, att
    status, att = await _attest(bureau, rep, subject, critic, "ACCEPTED")
    assert (status, att["code"]) == (422, "SELF_DEALING")


async def test_an_exclusion_is_not_lifted_by_a_later_amendment(
        bureau: BureauUnderTest) -> None:
    rep = await bureau.reporter()
    seller = await enroll(bureau, operator="Ingen")
    buyer = await enroll(bureau)
    status, att = await _attest(bureau, rep, seller, buyer)
    assert status == 201, att
    await bureau.accepted(buyer, "amendment", {"issued_at": issued(), "operator": "INGEN"})
    [excl] = await _exclusions_of(bureau, str(att["id"]))
    await bureau.accepted(buyer, "amendment", {"issued_at": issued(), "operator": "Biosyn"})
    status, later = await _attest(bureau, rep, seller, buyer)
    assert status == 201, later  # unlinked again: new verdicts count ...
    # ... but the excluded one stays excluded: nothing after it names it again
    assert await _exclusions_of(bureau, str(att["id"])) == [excl]
    assert [e for e in await stored_entries(bureau) if e.seq > excl.seq
            and str(att["id"]) in json.dumps(e.doc)] == []


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
