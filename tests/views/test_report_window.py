"""The window between a seal and its reports (issue 35): a reader is never told "no
report" for an agent that has one. The latest report is the agent's newest report of a
complete epoch; an agent with none is answered 503 with ``Retry-After`` while a sealed
epoch is being built (it may be in it), 404 only when none is. The build is held on a
table lock and the test waits on the seal's row, never on time."""

from __future__ import annotations

import asyncio
import base64
import json

import asyncpg

from tests.support import BureauUnderTest, get, kid, until
from tests.views.support import EPOCH_SECONDS, World, next_epoch, settle


def _epoch_of(body: bytes) -> int:
    epoch: int = json.loads(base64.b64decode(json.loads(body)["payload"]))["epoch"]
    return epoch


async def test_between_a_seal_and_its_reports_no_agent_that_has_one_is_told_none(
        bureau: BureauUnderTest) -> None:
    world = await World.make(bureau)
    known = await world.agent("known")
    await world.fact(known)
    [first] = await next_epoch(bureau)
    newcomer = await world.agent("newcomer")  # no report until the next epoch's
    await world.fact(newcomer)
    bureau.clock.advance(EPOCH_SECONDS)
    holder = await asyncpg.connect(bureau.database_url)
    try:
        async with holder.transaction():
            # the builder cannot store a checkpoint while this is held; readers can read
            await holder.execute("LOCK TABLE checkpoints IN EXCLUSIVE MODE")
            building = asyncio.create_task(settle(bureau))

            async def sealed() -> bool:
                return bool(await holder.fetchval(
                    "SELECT count(*) FROM seals WHERE epoch > $1", first))

            await until("the next epoch is sealed", sealed)
            status, body = await get(bureau, f"/v1/agents/{kid(known)}/report")
            assert status == 200 and _epoch_of(body) == first  # its previous report
            async with bureau.session.get(
                    f"{bureau.url}/v1/agents/{kid(newcomer)}/report") as resp:
                # before: 404 "no report … at the latest sealed epoch"
                assert resp.status == 503, await resp.text()
                assert resp.headers["Retry-After"]
                assert (await resp.json())["code"] == "UNAVAILABLE"
        [second] = await building
    finally:
        await holder.close()
    for agent in (known, newcomer):
        status, body = await get(bureau, f"/v1/agents/{kid(agent)}/report")
        assert status == 200 and _epoch_of(body) == second
    status, _ = await get(bureau, "/v1/agents/ed25519:" + "A" * 43 + "/report")
    assert status == 404  # nothing being built, and no report: none
    await bureau.verify()


async def test_an_agent_missing_from_the_newest_epoch_is_served_its_newest_report(
        bureau: BureauUnderTest) -> None:
    """Whatever left the newest complete epoch without the agent's report (the issue's
    20 s after a rotation, a restart and a seal), its newest report is served."""
    world = await World.make(bureau)
    agent = await world.agent("known")
    await world.fact(agent)
    [first] = await next_epoch(bureau)
    await world.fact(agent)
    [second] = await next_epoch(bureau)
    conn = await asyncpg.connect(bureau.database_url)
    try:
        kept = await conn.fetchrow("DELETE FROM reports WHERE agent = $1 AND epoch = $2"
                                   " RETURNING *", kid(agent), second)
        status, body = await get(bureau, f"/v1/agents/{kid(agent)}/report")
        assert status == 200 and _epoch_of(body) == first  # before: 404
        await conn.execute("INSERT INTO reports VALUES ($1, $2, $3)", *kept.values())
    finally:
        await conn.close()
    await bureau.verify()
