"""Reads degrade cleanly (SPEC §9 r3; issue 20 finding 5). With the database down, every
public read answered ``500 "internal error"`` on revision-2 main, with a full traceback
logged per request; intake rightly answered 503. Now every route that needs the database
answers ``503 UNAVAILABLE`` with ``Retry-After``, the outage is logged once (not a
traceback per request) and counted in ``bureau_database_outages_total``."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest
from aiohttp import web

from bureau.http.routes import TABLES
from reporters import wire
from reporters.httpsig import sign_request_headers
from tests.hardening.pg import PrivatePostgres
from tests.interop.support import BUREAU_ETH, PUBLIC_URL
from tests.support import BureauUnderTest, kid, registry_sample, start_bureau

pytestmark = pytest.mark.slow

AGENT = kid(wire.generate_key())
#: a sample for each path parameter, and a query each route answers with data
SAMPLES = {"agent": AGENT, "reporter": AGENT, "epoch": "0", "hash": "0" * 64,
           "name": "io.example/server", "tile": "0/000.p/1",
           "file": f"{AGENT}.0.eip155:1:0x{'0' * 40}.7.bureauScore.json"}
QUERIES = {"/v1/proofs/inclusion": "?id=" + "0" * 64 + "&size=1",
           "/v1/proofs/consistency": "?from=0&to=1",
           "/v1/agents/{agent}/settlement": "?epoch=0"}
#: routes that never ask the database: they answer as ever while it is away
NO_DATABASE = {"/healthz", "/openapi.json", "/v1/policies/{hash}"}
#: signed reads (that party): signed by the party the path names
SIGNED = ("/entries", "/explain", "/evaluator", "/settlement")


def get_routes() -> list[str]:
    app = web.Application()
    for table in TABLES:
        app.add_routes(table)
    paths = []
    for route in app.router.routes():
        if route.method != "GET" or route.resource is None:
            continue
        info = route.resource.get_info()
        paths.append(info.get("formatter") or info["path"])
    return paths


def outages() -> float:
    return registry_sample("bureau_database_outages_total")


async def _get(bureau: BureauUnderTest, template: str, key: object) -> tuple[int, dict]:
    path = template.format(**SAMPLES) + QUERIES.get(template, "")
    headers = {}
    if template.endswith(SIGNED):
        headers = sign_request_headers(key, "GET", path)  # type: ignore[arg-type]
    async with bureau.session.get(bureau.url + path, headers=headers) as resp:
        body = await resp.json() if resp.content_type == "application/json" else {}
        return resp.status, {**body, "retry_after": resp.headers.get("Retry-After")}


async def test_every_route_answers_503_once_logged(private_pg: PrivatePostgres, tmp_path,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    agent_key = wire.generate_key()
    SAMPLES["agent"] = SAMPLES["reporter"] = kid(agent_key)
    routes = get_routes()
    assert len(routes) >= 15
    # configured for the interop views too, so that theirs ask the database as well
    async with start_bureau(private_pg.url, tmp_path, public_url=PUBLIC_URL,
                            eth_address=BUREAU_ETH) as bureau:
        before = outages()
        private_pg.stop("immediate")
        caplog.clear()
        caplog.set_level(logging.WARNING)
        for _ in range(2):  # twice: the second round logs nothing more
            for template in routes:
                status, body = await _get(bureau, template, agent_key)
                if template in NO_DATABASE:
                    assert status < 500, (template, status, body)
                    continue
                assert status == 503, (template, status, body)
                assert body["code"] == "UNAVAILABLE" and body["retry_after"], (template, body)
        said = [r for r in caplog.records if r.name.startswith("bureau.http")]
        assert [r.getMessage().split(" (")[0] for r in said] == ["database unreachable"], \
            [r.getMessage() for r in said]
        assert not any(r.exc_info for r in caplog.records), "a traceback was logged"
        assert outages() == before + 1
        private_pg.start()
        deadline = time.monotonic() + 60
        while (await _get(bureau, "/v1/bureau", agent_key))[0] != 200:
            assert time.monotonic() < deadline, "the service did not come back"
            await asyncio.sleep(0.05)
