"""Intake behaviour over real HTTP on a real database (SPEC §5)."""

from __future__ import annotations

import asyncpg

from reporters import wire
from tests.intake.envelopes import randomized_signature, with_signature
from tests.support import BureauUnderTest, fact_payload, kid, now_text, registration


async def test_fact_accepted_then_duplicate(bureau: BureauUnderTest) -> None:
    rep = await bureau.reporter()
    agent = wire.generate_key()
    env = wire.sign_payload(rep, "fact", fact_payload("i-1", kid(agent)))
    status, body = await bureau.post(env)
    assert status == 201, body
    assert body["status"] == "accepted" and body["seq"] == 3  # after genesis and reporter
    status, again = await bureau.post(env)
    assert status == 200 and again == {**body, "status": "duplicate"}


async def test_resigned_envelope_is_the_same_submission(bureau: BureauUnderTest) -> None:
    """Duplicates are recognised by content, never by signature bytes."""
    rep = await bureau.reporter()
    body = wire.canonical_json(fact_payload("i-1", kid(wire.generate_key())))
    first = wire.sign_envelope(rep, wire.payload_type("fact"), body)
    other_sig = randomized_signature(rep, wire.pae(wire.payload_type("fact"), body))
    assert wire.b64encode(other_sig) != first["signatures"][0]["sig"]
    second = with_signature(first, sig=other_sig)
    _, a = await bureau.post(first)
    status, b = await bureau.post(second)
    assert status == 200, b
    assert (b["status"], b["id"], b["seq"]) == ("duplicate", a["id"], a["seq"])


async def test_conflicting_fact_is_refused_and_kept(bureau: BureauUnderTest) -> None:
    rep = await bureau.reporter()
    subject = kid(wire.generate_key())
    await bureau.accepted(rep, "fact", fact_payload("i-1", subject))
    status, body = await bureau.submit(rep, "fact", fact_payload("i-1", subject, latency_ms=9))
    assert (status, body["code"]) == (422, "CONFLICTING_FACT")
    conn = await asyncpg.connect(bureau.database_url)
    try:
        kept = await conn.fetch("SELECT signer, code FROM refusals")
        facts = await conn.fetchval("SELECT count(*) FROM entries WHERE kind = 'fact'")
    finally:
        await conn.close()
    assert [(r["signer"], r["code"]) for r in kept] == [(kid(rep), "CONFLICTING_FACT")]
    assert facts == 1


async def test_same_interaction_from_two_reporters_is_two_facts(bureau: BureauUnderTest
                                                               ) -> None:
    """Interaction ids are scoped to their reporter."""
    subject = kid(wire.generate_key())
    for rep in (await bureau.reporter(), await bureau.reporter()):
        await bureau.accepted(rep, "fact", fact_payload("shared-id", subject))


async def test_fact_and_its_probe_in_one_batch(bureau: BureauUnderTest) -> None:
    rep = await bureau.reporter(roles=("facts", "probes"))
    subject = kid(wire.generate_key())
    results = await bureau.batch([
        wire.sign_payload(rep, "fact", fact_payload("i-7", subject)),
        wire.sign_payload(rep, "probe", {"interaction": "i-7", "subject": subject,
                                         "probe": "known-answer-1", "passed": True,
                                         "observed_at": now_text()}),
    ])
    assert [r["status"] for r in results] == ["accepted", "accepted"]
    assert results[1]["seq"] == results[0]["seq"] + 1


async def test_a_reporter_registered_earlier_in_the_batch_may_report(
        bureau: BureauUnderTest) -> None:
    rep = wire.generate_key()
    register = wire.sign_payload(bureau.admin, "reporter",
                                 registration(rep, name="new", operator="op"))
    fact = wire.sign_payload(rep, "fact", fact_payload("i-1", kid(wire.generate_key())))
    results = await bureau.batch([fact, register, fact])
    assert [r.get("code", r["status"]) for r in results] == [
        "UNKNOWN_REPORTER", "accepted", "accepted"]


async def test_reporter_roles_can_be_updated(bureau: BureauUnderTest) -> None:
    rep = await bureau.reporter(roles=("probes",))
    fact = fact_payload("i-1", kid(wire.generate_key()))
    assert (await bureau.submit(rep, "fact", fact))[1]["code"] == "MISSING_ROLE"
    await bureau.accepted(bureau.admin, "reporter",
                          registration(rep, ["facts", "probes"], operator="op"))
    await bureau.accepted(rep, "fact", fact)


async def test_metrics_count_intake_and_refusals(bureau: BureauUnderTest) -> None:
    rep = await bureau.reporter()
    await bureau.accepted(rep, "fact", fact_payload("m-1", kid(wire.generate_key())))
    await bureau.post(b"{}")
    async with bureau.session.get(bureau.ops_url + "/metrics") as resp:
        text = await resp.text()
    assert 'bureau_intake_total{payload_type="fact",result="accepted"}' in text
    assert 'bureau_refusals_total{code="MALFORMED_ENVELOPE"}' in text
    assert "bureau_ledger_head_seq" in text
    assert "bureau_http_request_seconds_bucket" in text


async def test_health_and_readiness(bureau: BureauUnderTest) -> None:
    for path, expected in (("/healthz", "ok"), ("/readyz", "ready")):
        async with bureau.session.get(bureau.url + path) as resp:
            assert resp.status == 200
            assert (await resp.json())["status"] == expected


async def test_a_big_group_goes_in_by_copy_with_every_index_row(
        bureau: BureauUnderTest) -> None:
    """Past writes.COPY_FROM entries a group's plain tables go in by COPY; the chain, the
    index rows and the answers are the same as by the one statement."""
    from bureau.storage.chain import COPY_FROM
    from bureau.verify import verify_database

    rep = await bureau.reporter(roles=("facts", "probes"))
    subject = kid(wire.generate_key())
    n = COPY_FROM  # facts and as many probes: one batch, one group
    lines = [wire.sign_payload(rep, "fact", fact_payload(f"big-{i}", subject))
             for i in range(n)]
    lines += [wire.sign_payload(rep, "probe", {
        "interaction": f"big-{i}", "subject": subject, "probe": "k", "passed": i % 2 == 0,
        "observed_at": now_text()}) for i in range(n)]
    results = await bureau.batch([*lines, lines[0]])
    assert [r["status"] for r in results] == ["accepted"] * (2 * n) + ["duplicate"]
    seqs = [r["seq"] for r in results[:-1]]
    assert seqs == list(range(seqs[0], seqs[0] + 2 * n))
    assert results[-1]["seq"] == seqs[0]
    conn = await asyncpg.connect(bureau.database_url)
    try:
        assert await conn.fetchval("SELECT count(*) FROM facts WHERE reporter = $1",
                                   kid(rep)) == n
        assert await conn.fetchval("SELECT count(*) FROM probes WHERE reporter = $1",
                                   kid(rep)) == n
        assert await verify_database(conn) == seqs[-1]
    finally:
        await conn.close()
