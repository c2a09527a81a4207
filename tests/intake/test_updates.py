"""Updates ordered by ``issued_at`` (SPEC §3 r2): a reporter's registration, an agent's
amendment and the ledger's policy. Setting a value back is a new submission that takes
effect (the revision-1 bug: it was answered ``duplicate`` and silently did nothing);
an update not later than the one in force is ``STALE_UPDATE``; re-sending an admitted
one is still a duplicate. And nobody reports on itself (SPEC §5 r2)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import nacl.signing

from bureau.scoring.policy import policy_hash
from reporters import wire
from tests.agents.support import enroll, enrollment, refused, witness
from tests.support import (
    BureauUnderTest,
    current_epoch,
    fact_payload,
    issued,
    kid,
    now_text,
    registration,
)


def _registration(reporter: nacl.signing.SigningKey, roles: list[str], *,
                  issued_at: str | None = None, operator: str = "Gateway Co") -> dict[str, Any]:
    return registration(reporter, roles, issued_at=issued_at, operator=operator,
                        distrusted_from=None)


def _probe(interaction: str, subject: nacl.signing.SigningKey) -> dict[str, Any]:
    return {"interaction": interaction, "subject": kid(subject), "probe": "known-1",
            "passed": True, "observed_at": now_text()}


async def test_a_role_taken_away_is_taken_away(bureau: BureauUnderTest) -> None:
    """The revision-1 bug: facts+probes, then facts only, then facts+probes again would
    have been a duplicate of the first and silently done nothing."""
    rep, agent = wire.generate_key(), wire.generate_key()
    first = _registration(rep, ["facts", "probes"])
    await bureau.accepted(bureau.admin, "reporter", first)
    await bureau.accepted(rep, "probe", _probe("p-1", agent))

    await bureau.accepted(bureau.admin, "reporter", _registration(rep, ["facts"]))
    status, body = await bureau.submit(rep, "probe", _probe("p-2", agent))
    assert (status, body["code"]) == (422, "MISSING_ROLE"), body

    # The very first registration, re-sent as it was: a duplicate, and not in force.
    status, again = await bureau.submit(bureau.admin, "reporter", first)
    assert (status, again["status"]) == (200, "duplicate"), again
    status, body = await bureau.submit(rep, "probe", _probe("p-3", agent))
    assert (status, body["code"]) == (422, "MISSING_ROLE"), body

    # Giving the role back is a new issued_at: a new update, in force.
    await bureau.accepted(bureau.admin, "reporter", _registration(rep, ["facts", "probes"]))
    await bureau.accepted(rep, "probe", _probe("p-4", agent))


async def test_an_operator_changed_back_is_changed_back(bureau: BureauUnderTest) -> None:
    """X -> Y -> X: the third amendment is new and in force (here it makes the evaluator
    linked to the subject again, so its favourable verdict is refused)."""
    rep = await bureau.reporter()
    seller = await enroll(bureau, operator="Initech")
    buyer = await enroll(bureau, operator="Initech")
    await bureau.accepted(buyer, "amendment", {"issued_at": issued(), "operator": "Hooli"})
    await bureau.accepted(buyer, "amendment", {"issued_at": issued(), "operator": "Initech"})
    ia = await witness(bureau, rep, seller, buyer)
    assert await refused(bureau, buyer, "attestation", {
        "reporter": kid(rep), "interaction": ia, "subject": kid(seller),
        "outcome": "ACCEPTED", "corrections": 0}) == ("SELF_DEALING", "/subject")


async def test_an_update_not_later_than_the_one_in_force_is_stale(
        bureau: BureauUnderTest) -> None:
    rep = wire.generate_key()
    at = issued()
    await bureau.accepted(bureau.admin, "reporter", _registration(rep, ["facts"], issued_at=at))
    for earlier_or_same in (at, "2026-01-01T00:00:00Z"):
        assert await refused(bureau, bureau.admin, "reporter", _registration(
            rep, ["facts", "probes"], issued_at=earlier_or_same)) == (
            "STALE_UPDATE", "/issued_at")

    agent = await enroll(bureau)
    # the first amendment is compared with nothing, however old its issued_at
    await bureau.accepted(agent, "amendment", {"issued_at": "2026-01-01T00:00:00Z",
                                               "name": "first"})
    assert await refused(bureau, agent, "amendment", {
        "issued_at": "2026-01-01T00:00:00Z", "name": "same instant"}) == (
        "STALE_UPDATE", "/issued_at")
    await bureau.accepted(agent, "amendment", {"issued_at": "2026-01-01T00:00:00.000001Z",
                                               "name": "a microsecond later"})


async def test_issued_at_far_in_the_future_is_clock_skew(bureau: BureauUnderTest) -> None:
    rep = wire.generate_key()
    assert await refused(bureau, bureau.admin, "reporter", _registration(
        rep, ["facts"], issued_at=now_text(400))) == ("CLOCK_SKEW", "/issued_at")
    agent = await enroll(bureau)
    assert await refused(bureau, agent, "amendment", {
        "issued_at": now_text(400), "name": "from the future"}) == ("CLOCK_SKEW", "/issued_at")


async def test_a_policy_entry_and_its_refusals(bureau: BureauUnderTest) -> None:
    v1 = policy_hash()
    conn_epoch = current_epoch(bureau)
    at = issued()
    await bureau.accepted(bureau.admin, "policy", {
        "policy": v1, "from_epoch": conn_epoch + 1, "issued_at": at})

    assert await refused(bureau, bureau.admin, "policy", {
        "policy": "f" * 64, "from_epoch": conn_epoch + 1, "issued_at": issued()}) == (
        "STALE_UPDATE", "/policy")
    assert await refused(bureau, bureau.admin, "policy", {
        "policy": v1, "from_epoch": conn_epoch - 1, "issued_at": issued()}) == (
        "STALE_UPDATE", "/from_epoch")
    assert await refused(bureau, bureau.admin, "policy", {
        "policy": v1, "from_epoch": conn_epoch + 2, "issued_at": at}) == (
        "STALE_UPDATE", "/issued_at")
    # the current epoch itself has not been sealed: a policy may start there
    await bureau.accepted(bureau.admin, "policy", {
        "policy": v1, "from_epoch": conn_epoch, "issued_at": issued()})
    agent = await enroll(bureau)
    assert await refused(bureau, agent, "policy", {
        "policy": v1, "from_epoch": conn_epoch + 1, "issued_at": issued()}) == (
        "NOT_ADMIN", "")


async def test_a_reporter_may_not_report_on_itself(bureau: BureauUnderTest) -> None:
    rep = await bureau.reporter()
    other = wire.generate_key()
    assert await refused(bureau, rep, "fact", fact_payload("self-1", kid(rep))) == (
        "SELF_DEALING", "/subject")
    assert await refused(bureau, rep, "fact", fact_payload("self-2", kid(other),
                                                           kid(rep))) == (
        "SELF_DEALING", "/caller")
    assert await refused(bureau, rep, "probe", _probe("self-3", rep)) == (
        "SELF_DEALING", "/subject")


async def test_an_evaluator_may_not_name_itself_as_the_reporter(
        bureau: BureauUnderTest) -> None:
    """A key that is both a registered reporter and an enrolled agent cannot vouch for a
    call it claims to have carried itself."""
    both = wire.generate_key()
    await bureau.accepted(bureau.admin, "reporter", _registration(both, ["facts"]))
    await bureau.accepted(both, "enrollment", enrollment())
    subject = await enroll(bureau)
    assert await refused(bureau, both, "attestation", {
        "reporter": kid(both), "interaction": "ia-1", "subject": kid(subject),
        "outcome": "ACCEPTED", "corrections": 0}) == ("SELF_DEALING", "/reporter")
    assert await refused(bureau, both, "value-judgment", {
        "reporter": kid(both), "engagement": "e-1", "subject": kid(subject),
        "judgment": "VALUE_OK", "spent": 1, "currency": "USD", "units": []}) == (
        "SELF_DEALING", "/reporter")


def test_the_client_issues_ever_later_timestamps() -> None:
    stamps = [issued() for _ in range(1000)]
    parsed = [dt.datetime.fromisoformat(s.replace("Z", "+00:00")) for s in stamps]
    assert parsed == sorted(parsed) and len(set(parsed)) == len(parsed)
