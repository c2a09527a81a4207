"""Value judgments: only by the buyer of a time-and-materials engagement, matching the
engagement's latest fact in subject, buyer, spent, currency and units (SPEC §5, §7)."""

from __future__ import annotations

import json
import secrets
from typing import Any

import pytest

from reporters import wire
from tests.agents.support import (
    Key,
    engagement,
    enroll,
    interaction_id,
    refused,
    stored_refusals,
    value_judgment,
)
from tests.support import BureauUnderTest, fact_payload, kid


async def _engage(bureau: BureauUnderTest, rep: Key, seller: Key, buyer: Key | None,
                  **eng: Any) -> str:
    """A fact of a new engagement between ``seller`` and ``buyer``; returns its id."""
    eng_id = "eng-" + secrets.token_hex(4)
    await bureau.accepted(rep, "fact", fact_payload(
        interaction_id(), kid(seller), kid(buyer) if buyer is not None else None,
        engagement=engagement(eng_id, **eng)))
    return eng_id


async def test_value_judgment_matching_the_engagement_is_accepted(
        bureau: BureauUnderTest) -> None:
    rep = await bureau.reporter()
    seller, buyer = await enroll(bureau), await enroll(bureau)
    eng = await _engage(bureau, rep, seller, buyer, spent=2_000_000)
    await bureau.accepted(buyer, "value-judgment",
                          value_judgment(rep, eng, seller, 2_000_000, judgment="VALUE_POOR"))


async def test_value_judgment_on_a_fixed_scope_engagement_is_not_time_and_materials(
        bureau: BureauUnderTest) -> None:
    rep = await bureau.reporter()
    seller, buyer = await enroll(bureau), await enroll(bureau)
    eng = await _engage(bureau, rep, seller, buyer, arrangement="FIXED_SCOPE")
    assert await refused(bureau, buyer, "value-judgment",
                         value_judgment(rep, eng, seller)) == (
        "NOT_TIME_AND_MATERIALS", "/engagement")


@pytest.mark.parametrize(("changed", "path"), [
    ({"spent": 2_000_001}, "/spent"),
    ({"currency": "EUR"}, "/currency"),
    ({"units": [{"unit": "hour", "quantity": 4}]}, "/units"),
    ({"units": [{"unit": "day", "quantity": 3}]}, "/units"),
    ({"units": []}, "/units"),
])
async def test_value_judgment_differing_in_an_amount_is_amount_mismatch(
        bureau: BureauUnderTest, changed: dict[str, Any], path: str) -> None:
    rep = await bureau.reporter()
    seller, buyer = await enroll(bureau), await enroll(bureau)
    eng = await _engage(bureau, rep, seller, buyer)
    vj = {**value_judgment(rep, eng, seller), **changed}
    assert await refused(bureau, buyer, "value-judgment", vj) == ("AMOUNT_MISMATCH", path)


async def test_value_judgment_without_a_fact_is_unwitnessed(bureau: BureauUnderTest) -> None:
    rep = await bureau.reporter()
    seller, buyer = await enroll(bureau), await enroll(bureau)
    assert await refused(bureau, buyer, "value-judgment",
                         value_judgment(rep, "eng-never-seen", seller)) == (
        "UNWITNESSED", "/engagement")


async def test_value_judgment_about_another_subject_is_unwitnessed(
        bureau: BureauUnderTest) -> None:
    rep = await bureau.reporter()
    seller, other, buyer = await enroll(bureau), await enroll(bureau), await enroll(bureau)
    eng = await _engage(bureau, rep, seller, buyer)
    assert await refused(bureau, buyer, "value-judgment",
                         value_judgment(rep, eng, other)) == ("UNWITNESSED", "/engagement")


async def test_unwitnessed_value_judgments_are_byte_identical_and_say_nothing_more(
        bureau: BureauUnderTest) -> None:
    """SPEC §5 r2: no such engagement, another subject, another buyer — one answer; and a
    stranger to a fixed-scope engagement, or one whose amounts differ, hears the same
    UNWITNESSED, not NOT_TIME_AND_MATERIALS or AMOUNT_MISMATCH (those are for the buyer)."""
    rep = await bureau.reporter()
    seller, buyer, prober = await enroll(bureau), await enroll(bureau), await enroll(bureau)
    theirs = await _engage(bureau, rep, seller, buyer)
    fixed = await _engage(bureau, rep, seller, buyer, arrangement="FIXED_SCOPE")
    mine = await _engage(bureau, rep, seller, prober)
    cases = {
        "no such engagement": value_judgment(rep, "eng-never-seen", seller),
        "another subject": value_judgment(rep, mine, buyer),
        "another buyer": value_judgment(rep, theirs, seller),
        "another buyer, fixed scope": value_judgment(rep, fixed, seller),
        "another buyer, other amounts": value_judgment(rep, theirs, seller, 7),
    }
    bodies = {}
    for case, payload in cases.items():
        status, body = await bureau.submit(prober, "value-judgment", payload)
        assert status == 422, case
        bodies[case] = json.dumps(body, sort_keys=True)
    assert len(set(bodies.values())) == 1, bodies
    assert json.loads(bodies["no such engagement"])["path"] == "/engagement"


@pytest.mark.parametrize("fact_has_buyer", [True, False], ids=["other-buyer", "no-buyer"])
async def test_value_judgment_from_someone_other_than_the_buyer_is_unwitnessed(
        bureau: BureauUnderTest, fact_has_buyer: bool) -> None:
    rep = await bureau.reporter()
    seller, buyer, bystander = await enroll(bureau), await enroll(bureau), await enroll(bureau)
    eng = await _engage(bureau, rep, seller, buyer if fact_has_buyer else None)
    code, _ = await refused(bureau, bystander, "value-judgment",
                            value_judgment(rep, eng, seller))
    assert code == "UNWITNESSED"


async def test_value_judgment_from_an_unenrolled_buyer_is_not_enrolled(
        bureau: BureauUnderTest) -> None:
    rep = await bureau.reporter()
    seller, buyer = await enroll(bureau), wire.generate_key()
    eng = await _engage(bureau, rep, seller, buyer)
    assert await refused(bureau, buyer, "value-judgment",
                         value_judgment(rep, eng, seller)) == ("NOT_ENROLLED", "")


async def test_value_judgment_must_match_the_latest_fact_of_the_engagement(
        bureau: BureauUnderTest) -> None:
    rep = await bureau.reporter()
    seller, buyer = await enroll(bureau), await enroll(bureau)
    eng = await _engage(bureau, rep, seller, buyer, spent=1_000_000)
    await bureau.accepted(rep, "fact", fact_payload(
        interaction_id(), kid(seller), kid(buyer), engagement=engagement(eng, 3_000_000)))
    assert await refused(bureau, buyer, "value-judgment",
                         value_judgment(rep, eng, seller, 1_000_000)) == (
        "AMOUNT_MISMATCH", "/spent")
    await bureau.accepted(buyer, "value-judgment", value_judgment(rep, eng, seller, 3_000_000))


async def test_the_latest_fact_counts_within_one_batch(bureau: BureauUnderTest) -> None:
    rep = await bureau.reporter()
    seller, buyer = await enroll(bureau), await enroll(bureau)
    eng = await _engage(bureau, rep, seller, buyer, spent=1_000_000)
    results = await bureau.batch([
        wire.sign_payload(rep, "fact", fact_payload(
            interaction_id(), kid(seller), kid(buyer), engagement=engagement(eng, 5_000_000))),
        wire.sign_payload(buyer, "value-judgment", value_judgment(rep, eng, seller, 1_000_000)),
        wire.sign_payload(buyer, "value-judgment", value_judgment(rep, eng, seller, 5_000_000)),
    ])
    assert [(r["status"], r.get("code")) for r in results] == [
        ("accepted", None), ("rejected", "AMOUNT_MISMATCH"), ("accepted", None)]


async def test_a_second_value_judgment_by_the_same_buyer_is_duplicate_verdict(
        bureau: BureauUnderTest) -> None:
    rep = await bureau.reporter()
    seller, buyer = await enroll(bureau), await enroll(bureau)
    eng = await _engage(bureau, rep, seller, buyer)
    first = wire.sign_payload(buyer, "value-judgment", value_judgment(rep, eng, seller))
    status, body = await bureau.post(first)
    assert status == 201, body
    status, again = await bureau.post(first)
    assert (status, again) == (200, {**body, "status": "duplicate"})
    assert await refused(bureau, buyer, "value-judgment",
                         value_judgment(rep, eng, seller, judgment="VALUE_POOR")) == (
        "DUPLICATE_VERDICT", "/engagement")
    assert (kid(buyer), "DUPLICATE_VERDICT") in await stored_refusals(bureau)
