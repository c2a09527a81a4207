"""Reporter distrust through a real bureau (SPEC §3): a report applies the distrust in
force at its seal, sealed reports never change, null lifts it, and report workers and
``bureau rebuild`` agree byte for byte."""

from __future__ import annotations

from typing import Any

import asyncpg
import nacl.signing

from tests.support import BureauUnderTest, kid, now_text, registration
from tests.views.support import (
    World,
    assert_workers_and_rebuild_agree,
    bureau_key,
    get,
    next_epoch,
    open_envelope,
)


async def _registration(bureau: BureauUnderTest, rogue: nacl.signing.SigningKey,
                        since: str | None) -> None:
    await bureau.accepted(bureau.admin, "reporter", registration(
        rogue, ["facts", "probes"], name="rogue gateway", operator="Rogue Co",
        distrusted_from=since))


async def test_distrust_from_its_seal_on_and_lifted_later(bureau: BureauUnderTest) -> None:
    w = await World.make(bureau)
    victim, twin = await w.agent("victim"), await w.agent("twin")
    for subject in (victim, twin):  # the twin: the same record, nobody lies about it
        for _ in range(3):
            await w.fact(subject, None, check="PASS")
    rogue = await bureau.reporter(("facts",), operator="Rogue Co")
    since = now_text(-1)
    for i in range(5):  # fabricated failures
        await bureau.accepted(rogue, "fact", {
            "interaction": f"lie-{i}", "subject": kid(victim), "caller": None,
            "observed_at": now_text(-1), "answered": True, "latency_ms": 5,
            "well_formed": True, "promises": [], "claimed": "SUCCESS", "check": "FAIL",
            "derived": None, "engagement": None})
    await next_epoch(bureau)
    key = await bureau_key(bureau)

    async def report(of: nacl.signing.SigningKey = victim) -> dict[str, Any]:
        return open_envelope((await get(bureau, f"/v1/agents/{kid(of)}/report"))[1], key)

    lied = await report()
    assert lied["outcomes"]["FAILED_DISCOVERED"] == 5

    await _registration(bureau, rogue, since)
    # after the update, even a backdated fact is distrusted: recorded after it
    await bureau.accepted(rogue, "fact", {
        "interaction": "lie-late", "subject": kid(victim), "caller": None,
        "observed_at": "2020-01-01T00:00:00Z", "answered": True, "latency_ms": 5,
        "well_formed": True, "promises": [], "claimed": "SUCCESS", "check": "FAIL",
        "derived": None, "engagement": None})
    await _registration(bureau, rogue, since)  # re-issued (same T): the same run
    await next_epoch(bureau)
    distrusted = await report()
    assert distrusted["excluded"] == {"self_dealing": 0, "disputed": 0, "distrusted": 6}
    assert distrusted["outcomes"]["FAILED_DISCOVERED"] == 0
    # the score of the record nobody lied about, under the ledger's policy (v1-v3: 4/5)
    assert distrusted["score"] == (await report(twin))["score"]
    assert [r["reporter"] for r in distrusted["reporters"]] == [None]

    await _registration(bureau, rogue, None)  # lifted for later seals
    await next_epoch(bureau)
    lifted = await report()
    assert lifted["excluded"]["distrusted"] == 0
    assert lifted["outcomes"]["FAILED_DISCOVERED"] == 6
    status, again = await get(bureau, f"/v1/agents/{kid(victim)}/report"
                                      f"?epoch={distrusted['epoch']}")
    assert status == 200 and open_envelope(again, key) == distrusted

    conn = await asyncpg.connect(bureau.database_url)
    try:
        stored = {(r["epoch"], r["agent"]): bytes(r["envelope"]) for r in await conn.fetch(
            "SELECT epoch, agent, envelope FROM reports")}
        await assert_workers_and_rebuild_agree(conn, bureau, stored)
    finally:
        await conn.close()
