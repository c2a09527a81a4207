"""Agent and Admin round trips against the real bureau; errors carry §6 codes."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web

import reporters
from reporters import httpsig
from tests.client.helpers import DEAD_URL
from tests.support import BureauUnderTest, fact_payload, serving


async def enrolled(bureau: BureauUnderTest, name: str, operator: str,
                   anchor: str) -> reporters.Agent:
    agent = reporters.Agent(reporters.generate_key(), bureau.url)
    receipt = await agent.enroll(name, anchor, operator, {"p1": "answers in time"})
    assert receipt.status == "accepted"
    return agent


async def test_enroll_round_trip_and_already_enrolled(bureau: BureauUnderTest) -> None:
    async with reporters.Agent(reporters.generate_key(), bureau.url) as agent:
        receipt = await agent.enroll("alpha", "ops@alpha.example", "Alpha Inc",
                                     {"p95-under-2s": "fast"})
        assert receipt.status == "accepted" and receipt.seq >= 1 and len(receipt.id) == 64
        with pytest.raises(reporters.Rejected) as info:
            await agent.enroll("alpha again", "alpha.example", "Alpha Inc")
        err = info.value
        assert (err.code, err.status) == ("ALREADY_ENROLLED", 422)
        assert isinstance(err, reporters.BureauClientError) and err.detail


async def test_attest_round_trip(bureau: BureauUnderTest) -> None:
    gateway = await bureau.reporter(("facts",))
    gw = reporters.key_id(gateway)
    caller = await enrolled(bureau, "caller", "Caller Inc", "ops@caller.example")
    worker = await enrolled(bureau, "worker", "Worker Ltd", "worker.example")
    try:
        with pytest.raises(reporters.Rejected) as info:  # no fact witnessed it yet
            await caller.attest(gw, "i-1", worker.key_id, "ACCEPTED")
        assert info.value.code == "UNWITNESSED"

        await bureau.accepted(gateway, "fact",
                              fact_payload("i-1", worker.key_id, caller.key_id))
        first = await caller.attest(gw, "i-1", worker.key_id, "ACCEPTED")
        assert first.status == "accepted"
        again = await caller.attest(gw, "i-1", worker.key_id, "ACCEPTED")
        assert again == reporters.Receipt("duplicate", first.id, first.seq)
        with pytest.raises(reporters.Rejected) as info:  # changing your mind buys nothing
            await caller.attest(gw, "i-1", worker.key_id, "ACCEPTED_AFTER_CORRECTIONS", 2)
        assert (info.value.code, info.value.status) == ("DUPLICATE_VERDICT", 422)
    finally:
        await caller.close()
        await worker.close()


async def test_value_judgment_amend_withdraw(bureau: BureauUnderTest) -> None:
    gateway = await bureau.reporter(("facts",))
    gw = reporters.key_id(gateway)
    buyer = await enrolled(bureau, "buyer", "Buyer Inc", "ops@buyer.example")
    seller = await enrolled(bureau, "seller", "Seller Ltd", "seller.example")
    engagement = {"id": "e-1", "arrangement": "TIME_AND_MATERIALS", "cap": 5_000_000,
                  "spent": 3_000_000, "currency": "USD",
                  "units": [{"unit": "hour", "quantity": 3}], "concluded": "COMPLETED"}
    await bureau.accepted(gateway, "fact", fact_payload("i-9", seller.key_id, buyer.key_id,
                                                        engagement=engagement))
    try:
        with pytest.raises(reporters.Rejected) as info:
            await buyer.value_judgment(gw, "e-1", seller.key_id, "VALUE_OK", 2_000_000, "USD",
                                       {"hour": 3})
        assert info.value.code == "AMOUNT_MISMATCH"
        ok = await buyer.value_judgment(gw, "e-1", seller.key_id, "VALUE_OK", 3_000_000, "USD",
                                        {"hour": 3})
        assert ok.status == "accepted"
        assert (await seller.amend(name="seller two")).status == "accepted"
        assert (await buyer.withdraw("closing down")).status == "accepted"
        with pytest.raises(reporters.Rejected) as info:
            await buyer.amend(operator="Buyer Two")
        assert info.value.code == "WITHDRAWN"
    finally:
        await buyer.close()
        await seller.close()


async def test_admin_register_dispute_resolve_seal(bureau: BureauUnderTest,
                                                   tmp_path: Path) -> None:
    gateway = reporters.generate_key()
    async with reporters.Admin(bureau.admin, bureau.url) as admin:
        receipt = await admin.register_reporter(reporters.key_id(gateway), "gw-1", "Gateway Co",
                                                ["facts"])
        assert receipt.status == "accepted"
        subject = await enrolled(bureau, "subject", "Subject Ltd", "subject.example")
        fact = await bureau.accepted(gateway, "fact", fact_payload("i-5", subject.key_id))
        dispute = await subject.dispute(fact["id"], "this never happened")
        await subject.close()
        assert dispute.status == "accepted"
        resolution = await admin.resolve(dispute.id, "UPHELD", "the gateway log shows it")
        assert resolution.status == "accepted"
        with pytest.raises(reporters.Rejected) as info:
            await admin.resolve(dispute.id, "EXCLUDED", "second thoughts")
        assert info.value.code == "ALREADY_RESOLVED"
        assert (await admin.seal()).status in ("accepted", "duplicate")

    async with reporters.Admin(reporters.generate_key(), bureau.url) as impostor:
        with pytest.raises(reporters.Rejected) as info:
            await impostor.register_reporter(reporters.key_id(gateway), "gw", "Evil", ["facts"])
        assert (info.value.code, info.value.status) == ("NOT_ADMIN", 422)


async def test_client_side_schema_errors_carry_pointers(bureau: BureauUnderTest) -> None:
    async with reporters.Agent(reporters.generate_key(), bureau.url) as agent:
        with pytest.raises(reporters.BureauClientError) as info:
            await agent.enroll("", "ops@x.example", "X")
        assert (info.value.code, info.value.path, info.value.status) == ("SCHEMA", "/name", None)
        with pytest.raises(reporters.BureauClientError) as info:
            await agent.attest(agent.key_id, "i-1", agent.key_id, "ACCEPTED", corrections=1)
        assert info.value.code == "SCHEMA" and not isinstance(info.value, reporters.Rejected)
        with pytest.raises(reporters.BureauClientError) as info:
            await agent.dispute("not-an-entry-id", "why")
        assert info.value.path == "/entry"


async def test_unreachable_bureau_is_unavailable() -> None:
    async with reporters.Agent(reporters.generate_key(), DEAD_URL, retries=1) as agent:
        with pytest.raises(reporters.Unavailable) as info:
            await agent.withdraw("gone")
        assert (info.value.code, info.value.status) == ("UNAVAILABLE", None)


@pytest.fixture
async def signed_reads_server() -> AsyncIterator[tuple[str, list[str]]]:
    """A loopback server that checks RFC 9421 signatures with the real verifier and
    answers like the bureau's read routes (which are built elsewhere)."""
    seen: list[str] = []
    nonces = httpsig.NonceStore()

    async def handler(request: web.Request) -> web.Response:
        kid = httpsig.verify_request(request.method, request.raw_path, request.headers,
                                     now=time.time(), nonces=nonces)
        seen.append(request.raw_path)
        if request.match_info["agent"] != kid:
            return web.json_response({"status": "rejected", "code": "FORBIDDEN", "path": "",
                                      "detail": "not yours"}, status=403)
        return web.json_response({"entries": [], "next_after": None, "refusals": [],
                                  "next_refusals_after": None})

    app = web.Application()
    app.router.add_get("/v1/agents/{agent}/entries", handler)
    app.router.add_get("/v1/agents/{agent}/explain", handler)
    async with serving(app) as url:
        yield url, seen


async def test_reads_are_signed_for_path_and_query(
        signed_reads_server: tuple[str, list[str]]) -> None:
    url, seen = signed_reads_server
    async with reporters.Agent(reporters.generate_key(), url) as agent:
        page = await agent.entries(after=7, limit=50, refusals_after=2)
        assert page == reporters.FilePage(entries=(), refusals=(), next_after=None,
                                          next_refusals_after=None)
        assert (await agent.explain(epoch=3))["entries"] == []
        assert seen == [f"/v1/agents/{agent.key_id}/entries?after=7&limit=50&refusals_after=2",
                        f"/v1/agents/{agent.key_id}/explain?epoch=3"]
