"""Helpers for the prober's tests: plain HTTP agents on loopback that answer, err,
decline or hang up; a prober in this process reporting to the real bureau; the entries
and reports as the bureau has them."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import asyncpg
import nacl.signing
from aiohttp import web

from reporters import wire
from reporters.prober import Pace, Prober, from_mapping
from tests.probing.solver import solve
from tests.support import BureauUnderTest, kid
from tests.views.support import bureau_key, get, open_envelope, settle

SEED = bytes.fromhex("5e" * 32)
#: A route's template for the agents below: JSON in, JSON out, a declared decline form.
TEMPLATE: dict[str, Any] = {
    "request": {"method": "POST", "path": "/solve", "json": {"question": "{{task}}"}},
    "response": {"reply": "/answer", "claim": {"pointer": "/status", "values": {
        "ok": "SUCCESS", "failed": "FAILURE", "declined": "DECLINED"}}},
}


async def question(request: web.Request) -> str:
    text: str = (await request.json())["question"]
    return text


async def right(request: web.Request) -> web.Response:
    """Answers every task right."""
    return web.json_response({"status": "ok", "answer": solve(await question(request))})


async def wrong(request: web.Request) -> web.Response:
    """Answers every task wrong, confidently: the right answer with a digit added."""
    return web.json_response({"status": "ok", "answer": solve(await question(request)) + "1"})


async def declining(request: web.Request) -> web.Response:
    """Says, in the route's declared form, that it will not do the task."""
    await question(request)
    return web.json_response({"status": "declined", "reason": "not my field"})


async def admits_failure(request: web.Request) -> web.Response:
    await question(request)
    return web.json_response({"status": "failed"}, status=500)


async def hangs_up(request: web.Request) -> web.Response:
    """Drops the connection without answering."""
    await question(request)
    assert request.transport is not None
    request.transport.close()
    return web.Response()


def route(agent: str, upstream: str, **more: Any) -> dict[str, Any]:
    """An http route to ``agent`` with :data:`TEMPLATE`, probed as fast as it goes."""
    return {"agent": agent, "upstream": upstream, "probes_per_hour": 360000, **TEMPLATE,
            **more}


def new_agent() -> nacl.signing.SigningKey:
    return wire.generate_key()


@asynccontextmanager
async def prober(bureau: BureauUnderTest, tmp: Path, routes: list[dict[str, Any]], *,
                 limit: int, reporter: nacl.signing.SigningKey | None = None,
                 **settings: Any) -> AsyncIterator[Prober]:
    """A prober in this process, with no gaps between tasks, run until every route has
    had ``limit`` tasks; yields it started (its spool delivered when the block ends)."""
    key = reporter if reporter is not None else await bureau.reporter(("facts", "probes"))
    config = from_mapping({"bureau_url": bureau.url, "key_file": "unused.key",
                           "spool_dir": str(tmp / "spool"), "ops_listen": "off",
                           "routes": routes, **settings}, tmp)
    p = Prober(config, key, SEED, Pace(gaps=lambda mean: 0.0, limit=limit))
    await p.start()
    try:
        yield p
    finally:
        await p.close()


async def run(p: Prober) -> None:
    """Probe until each route has had its ``limit``, then wait for the bureau's answers."""
    import asyncio

    await p.run_routes(asyncio.Event())
    await asyncio.wait_for(p.reporter.flush(), 60)


async def entries(database_url: str, signer: str, kind: str) -> list[dict[str, Any]]:
    """Every ``kind`` entry signed by ``signer``, its payload decoded, in ledger order."""
    conn = await asyncpg.connect(database_url)
    try:
        rows = await conn.fetch("SELECT entry FROM entries WHERE kind = $1 AND signer = $2"
                                " ORDER BY seq", kind, signer)
    finally:
        await conn.close()
    return [json.loads(base64.b64decode(json.loads(row["entry"])["envelope"]["payload"]))
            for row in rows]


async def refusals(database_url: str, signer: str) -> list[str]:
    conn = await asyncpg.connect(database_url)
    try:
        rows = await conn.fetch("SELECT code FROM refusals WHERE signer = $1", signer)
    finally:
        await conn.close()
    return [r["code"] for r in rows]


async def reports(bureau: BureauUnderTest, agents: Mapping[str, str]) -> dict[str, Any]:
    """Seal the epoch (moving the bureau's clock past it) and read each agent's report."""
    bureau.clock.advance(bureau.config.epoch_seconds)
    await settle(bureau)
    signer = await bureau_key(bureau)
    out = {}
    for name, agent in agents.items():
        status, body = await get(bureau, f"/v1/agents/{agent}/report")
        assert status == 200, body
        out[name] = open_envelope(body, signer)
    return out


__all__ = ["kid"]
