"""Probe results name the interaction they tested (SPEC §3, §5)."""

from __future__ import annotations

from typing import Any

from reporters import wire
from tests.agents.support import Key, enroll, interaction_id, refused, stored_refusals, witness
from tests.support import BureauUnderTest, fact_payload, kid, now_text


def probe(interaction: str, subject: Key, passed: bool = True,
          probe_id: str = "arith-17") -> dict[str, Any]:
    return {"interaction": interaction, "subject": kid(subject), "probe": probe_id,
            "passed": passed, "observed_at": now_text()}


async def test_probe_of_a_witnessed_interaction_is_accepted(bureau: BureauUnderTest) -> None:
    rep = await bureau.reporter(("facts", "probes"))
    agent = await enroll(bureau)
    ia = await witness(bureau, rep, agent, None)
    await bureau.accepted(rep, "probe", probe(ia, agent))


async def test_probe_naming_another_subject_than_the_fact_is_unwitnessed(
        bureau: BureauUnderTest) -> None:
    rep = await bureau.reporter(("facts", "probes"))
    agent, other = await enroll(bureau), await enroll(bureau)
    ia = await witness(bureau, rep, agent, None)
    assert await refused(bureau, rep, "probe", probe(ia, other)) == ("UNWITNESSED", "/subject")
    assert (kid(rep), "UNWITNESSED") in await stored_refusals(bureau)


async def test_probe_without_a_fact_is_its_own_interaction(bureau: BureauUnderTest) -> None:
    rep = await bureau.reporter(("probes",))
    agent = wire.generate_key()  # probes, like facts, need no enrollment
    await bureau.accepted(rep, "probe", probe(interaction_id(), agent, passed=False))


async def test_the_same_probe_again_is_a_duplicate(bureau: BureauUnderTest) -> None:
    rep = await bureau.reporter(("probes",))
    env = wire.sign_payload(rep, "probe", probe(interaction_id(), await enroll(bureau)))
    status, first = await bureau.post(env)
    assert status == 201, first
    status, again = await bureau.post(env)
    assert (status, again) == (200, {**first, "status": "duplicate"})


async def test_a_different_second_probe_result_is_conflicting_fact(
        bureau: BureauUnderTest) -> None:
    rep = await bureau.reporter(("facts", "probes"))
    agent = await enroll(bureau)
    ia = await witness(bureau, rep, agent, None)
    await bureau.accepted(rep, "probe", probe(ia, agent, passed=True))
    assert await refused(bureau, rep, "probe", probe(ia, agent, passed=False)) == (
        "CONFLICTING_FACT", "/interaction")
    assert (kid(rep), "CONFLICTING_FACT") in await stored_refusals(bureau)


async def test_interactions_are_scoped_to_their_reporter(bureau: BureauUnderTest) -> None:
    rep, other_rep = await bureau.reporter(), await bureau.reporter()
    agent, other = await enroll(bureau), await enroll(bureau)
    ia = await witness(bureau, rep, agent, None)
    await bureau.accepted(other_rep, "probe", probe(ia, other))


async def test_a_facts_only_reporter_sending_a_probe_is_missing_role(
        bureau: BureauUnderTest) -> None:
    rep = await bureau.reporter(("facts",))
    agent = await enroll(bureau)
    ia = await witness(bureau, rep, agent, None)
    assert await refused(bureau, rep, "probe", probe(ia, agent)) == ("MISSING_ROLE", "")


async def test_a_probes_only_reporter_sending_a_fact_is_missing_role(
        bureau: BureauUnderTest) -> None:
    rep = await bureau.reporter(("probes",))
    agent = await enroll(bureau)
    status, body = await bureau.submit(rep, "fact", {
        "interaction": interaction_id(), "subject": kid(agent), "caller": None,
        "observed_at": now_text(), "answered": True})
    assert (status, body["code"]) == (422, "MISSING_ROLE")


async def test_a_probe_from_an_unregistered_key_is_unknown_reporter(
        bureau: BureauUnderTest) -> None:
    stranger = wire.generate_key()
    assert await refused(bureau, stranger, "probe",
                         probe(interaction_id(), await enroll(bureau))) == (
        "UNKNOWN_REPORTER", "")


async def test_fact_after_a_probe_naming_another_subject_conflicts(
        bureau: BureauUnderTest) -> None:
    """The mirror of a probe that names another subject than the fact."""
    rep = await bureau.reporter(roles=("facts", "probes"))
    a, b = kid(wire.generate_key()), kid(wire.generate_key())
    await bureau.accepted(rep, "probe", {"interaction": "mirror-1", "subject": a,
                                         "probe": "pr-1", "passed": True,
                                         "observed_at": now_text()})
    status, body = await bureau.submit(rep, "fact", fact_payload("mirror-1", b))
    assert (status, body["code"], body["path"]) == (422, "CONFLICTING_FACT", "/subject")
    await bureau.accepted(rep, "fact", fact_payload("mirror-1", a))
