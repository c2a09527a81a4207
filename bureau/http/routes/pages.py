"""Pages for people (SPEC §9): ``GET /`` and ``GET /agents/{agent}``. Public, HTML, no
JavaScript; they show only what the signed reports and checkpoints already say."""

from __future__ import annotations

import json

from aiohttp import web

from bureau.errors import BureauError, Code
from bureau.http.errors import error_response
from bureau.http.keys import CONFIG, LEDGER, POOL, READS, SIGNING_KEY
from bureau.http.pages import agent_page, index_page, payload_of
from bureau.http.params import KEY_ID
from bureau.replica import absent
from bureau.views.policies import current_policy
from bureau.views.store import checkpoint_envelope, report_envelope
from reporters import wire

routes = web.RouteTableDef()

_HTML_HEADERS = {"Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'",
                 "X-Content-Type-Options": "nosniff"}


def _html(text: str) -> web.Response:
    return web.Response(text=text, content_type="text/html", charset="utf-8",
                        headers=_HTML_HEADERS)


@routes.get("/")
async def index(request: web.Request) -> web.Response:
    """The bureau's key, policy and latest checkpoint."""
    cp = await request.app[READS].run(lambda conn: checkpoint_envelope(conn, None))
    # The current policy from the primary, as /v1/policy reads it (bureau.http.routes.reads).
    async with request.app[POOL].acquire() as conn:
        policy = await current_policy(conn, request.app[LEDGER].clock(),
                                      request.app[CONFIG].epoch_seconds)
    return _html(index_page(wire.signing_key_id(request.app[SIGNING_KEY]), policy,
                            request.app[CONFIG].epoch_seconds,
                            payload_of(cp) if cp is not None else None))


@routes.get(f"/agents/{{agent:{KEY_ID}}}")
async def agent(request: web.Request) -> web.Response:
    """The agent's latest report, for a person to read."""
    key = request.match_info["agent"]
    envelope = await request.app[READS].run(lambda conn: report_envelope(conn, key, None),
                                            missing=absent)
    if envelope is None:
        return error_response(BureauError(Code.NOT_FOUND, "", f"no report for {key} yet"))
    pretty = json.dumps(json.loads(envelope), indent=2).encode()
    return _html(agent_page(payload_of(envelope), pretty,
                            wire.signing_key_id(request.app[SIGNING_KEY]),
                            request.app[CONFIG].public_url))
