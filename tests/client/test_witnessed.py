"""Attesting (and judging value) while the fact is still on its way: the helpers retry
UNWITNESSED with a capped backoff until it lands or the deadline passes — against the
real bureau, and through the real reporting proxy."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from aiohttp import web

import reporters
from reporters.httpsig import sign_request_headers
from reporters.proxy import INTERACTION_HEADER, REPORTER_HEADER
from tests.proxy.support import running_proxy, upstream
from tests.support import BureauUnderTest, fact_payload

FAST = {"first_delay": 0.05, "max_delay": 0.2}


async def enrolled(bureau: BureauUnderTest, name: str) -> reporters.Agent:
    agent = reporters.Agent(reporters.generate_key(), bureau.url)
    await agent.enroll(name, f"{name}.example", f"{name} Ltd")
    return agent


async def refusals(agent: reporters.Agent, code: str) -> int:
    return sum(r.code == code for p in [p async for p in agent.pages()] for r in p.refusals)


async def test_an_attestation_lands_once_its_fact_is_in(bureau: BureauUnderTest) -> None:
    gateway = await bureau.reporter(("facts",))
    caller, worker = await enrolled(bureau, "caller"), await enrolled(bureau, "worker")
    try:
        attesting = asyncio.create_task(caller.attest_when_witnessed(
            reporters.key_id(gateway), "w-1", worker.key_id, "ACCEPTED", deadline=30, **FAST))
        while await refusals(caller, "UNWITNESSED") == 0:  # it has tried, and been refused
            await asyncio.sleep(0.02)
        assert not attesting.done()
        await bureau.accepted(gateway, "fact", fact_payload("w-1", worker.key_id,
                                                            caller.key_id))
        receipt = await asyncio.wait_for(attesting, 30)
        assert receipt.status == "accepted"
        page = await caller.entries()
        assert [e.seq for e in page.entries if e.kind == "attestation"] == [receipt.seq]
        # However many attempts it took, they were the same signed bytes: the bureau
        # kept one refusal for them.
        assert [r.code for r in page.refusals] == ["UNWITNESSED"]
    finally:
        await caller.close()
        await worker.close()


async def test_the_deadline_ends_the_retrying(bureau: BureauUnderTest) -> None:
    gateway = await bureau.reporter(("facts",))
    caller, worker = await enrolled(bureau, "caller"), await enrolled(bureau, "worker")
    try:
        with pytest.raises(reporters.Rejected) as info:
            await caller.attest_when_witnessed(reporters.key_id(gateway), "never",
                                               worker.key_id, "ACCEPTED", deadline=0.5, **FAST)
        assert (info.value.code, info.value.path) == ("UNWITNESSED", "/interaction")
    finally:
        await caller.close()
        await worker.close()


async def test_other_refusals_are_not_retried(bureau: BureauUnderTest) -> None:
    gateway = await bureau.reporter(("facts",))
    gw = reporters.key_id(gateway)
    caller, worker = await enrolled(bureau, "caller"), await enrolled(bureau, "worker")
    try:
        await bureau.accepted(gateway, "fact", fact_payload("w-2", worker.key_id,
                                                            caller.key_id))
        await caller.attest(gw, "w-2", worker.key_id, "ACCEPTED")
        with pytest.raises(reporters.Rejected) as info:
            await caller.attest_when_witnessed(gw, "w-2", worker.key_id, "FAILED_DISCOVERED",
                                               deadline=600, first_delay=60, max_delay=60)
        assert info.value.code == "DUPLICATE_VERDICT"  # at once, not after a minute
        with pytest.raises(reporters.BureauClientError) as info:  # before anything is sent
            await caller.attest_when_witnessed(gw, "w-2", worker.key_id,
                                               "ACCEPTED_AFTER_CORRECTIONS", corrections=0)
        assert info.value.code == "SCHEMA"
        with pytest.raises(ValueError):
            await caller.attest_when_witnessed(gw, "w-2", worker.key_id, "ACCEPTED",
                                               first_delay=5, max_delay=1)
    finally:
        await caller.close()
        await worker.close()


async def test_a_value_judgment_waits_for_the_final_fact(bureau: BureauUnderTest) -> None:
    gateway = await bureau.reporter(("facts",))
    buyer, seller = await enrolled(bureau, "buyer"), await enrolled(bureau, "seller")

    def engaged(interaction: str, spent: int) -> dict[str, object]:
        return fact_payload(interaction, seller.key_id, buyer.key_id, engagement={
            "id": "e-7", "arrangement": "TIME_AND_MATERIALS", "cap": 9_000_000,
            "spent": spent, "currency": "EUR", "units": [{"unit": "hour", "quantity": 3}],
            "concluded": "COMPLETED" if spent == 3_000_000 else None})

    try:
        await bureau.accepted(gateway, "fact", engaged("e-7:1", 1_000_000))
        judging = asyncio.create_task(buyer.value_judgment_when_witnessed(
            reporters.key_id(gateway), "e-7", seller.key_id, "VALUE_OK", 3_000_000, "EUR",
            {"hour": 3}, deadline=30, retry_on=("UNWITNESSED", "AMOUNT_MISMATCH"), **FAST))
        while await refusals(buyer, "AMOUNT_MISMATCH") == 0:
            await asyncio.sleep(0.02)
        await bureau.accepted(gateway, "fact", engaged("e-7:2", 3_000_000))
        assert (await asyncio.wait_for(judging, 30)).status == "accepted"
    finally:
        await buyer.close()
        await seller.close()


async def test_attesting_right_after_a_call_through_the_proxy(bureau: BureauUnderTest,
                                                              tmp_path: Path) -> None:
    """What an agent does in practice: call through the proxy, then attest at once with
    the ids from the answer's headers; the proxy still holds the fact for its window."""
    async def work(request: web.Request) -> web.Response:
        return web.json_response({"answer": 42})

    caller_key = reporters.generate_key()
    caller = reporters.Agent(caller_key, bureau.url)
    await caller.enroll("caller", "caller.example", "caller Ltd")
    worker = await enrolled(bureau, "worker")
    try:
        async with upstream(work) as up, running_proxy(bureau, tmp_path, [
                {"prefix": "/w", "agent": worker.key_id, "upstream": up}], settle=2.0,
                quiet=4.0) as px:
            url = px.url + "/w/solve"
            async with px.session.post(url, data=b"{}", headers=sign_request_headers(
                    caller_key, "POST", url)) as resp:
                reporter, interaction = (resp.headers[REPORTER_HEADER],
                                         resp.headers[INTERACTION_HEADER])
            receipt = await caller.attest_when_witnessed(reporter, interaction, worker.key_id,
                                                         "ACCEPTED", deadline=60, **FAST)
        assert receipt.status == "accepted"
        # Refused while the proxy held the fact (the first attempt comes at once, the
        # fact after the 2 s window): the attempts left one refusal between them.
        assert await refusals(caller, "UNWITNESSED") <= 1
    finally:
        await caller.close()
        await worker.close()
