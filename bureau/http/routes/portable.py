"""Proofs that travel, for anyone (SPEC §9.1 r4; docs/transparency.md, "Proof bundles
and cards"):

* ``GET /v1/agents/{agent}/proof[?epoch=E]`` — the proof bundle of the agent's report
  at ``E`` (default: the latest sealed): report, checkpoint, log proof, key history; it
  verifies with no network (``bureau-check bundle``);
* ``GET /v1/agents/{agent}/card[?epoch=E]`` — the compact card of that report, at most
  4,000 bytes (``bureau-check card``).

Both are canonical JSON. Their log proof is against the head the most witnesses
cosigned, so it can improve once witnesses answer: served for a minute, not as
immutable. ``404 NOT_FOUND`` when there is no such report (or, for a card, when its
epoch was built before cards were signed); ``422 SCHEMA`` for a bad ``epoch``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web

from bureau.errors import BureauError, Code
from bureau.http.errors import error_response
from bureau.http.keys import LOG_KEY, READS
from bureau.http.params import KEY_ID
from bureau.http.routes.reads import epoch_query
from bureau.reads.portable import bundle_of, card_of
from bureau.replica import absent
from bureau.storage import db
from reporters.portable import card_bytes

routes = web.RouteTableDef()

_FRESH = {"Cache-Control": "public, max-age=60"}


#: (connection, agent, epoch or None, origin) -> the body, None when there is none
Read = Callable[[db.Connection, str, "int | None", str], Awaitable["bytes | None"]]


async def _serve(request: web.Request, read: Read, missing: str) -> web.Response:
    agent, origin = request.match_info["agent"], request.app[LOG_KEY].origin
    try:
        epoch = epoch_query(request)
    except BureauError as err:
        return error_response(err)  # a bad query is not a refused envelope
    body = await request.app[READS].run(lambda conn: read(conn, agent, epoch, origin),
                                        missing=absent)
    if body is None:
        where = "at the latest sealed epoch" if epoch is None else f"at epoch {epoch}"
        return error_response(BureauError(Code.NOT_FOUND, "", f"no {missing} for {agent} "
                                          f"{where}"))
    return web.Response(body=body, content_type="application/json", headers=_FRESH)


async def _card(conn: db.Connection, agent: str, epoch: int | None, origin: str
                ) -> bytes | None:
    card = await card_of(conn, agent, epoch, origin)
    return None if card is None else card_bytes(card)


@routes.get(f"/v1/agents/{{agent:{KEY_ID}}}/proof")
async def agent_proof(request: web.Request) -> web.Response:
    """The proof bundle of the agent's report (public)."""
    return await _serve(request, bundle_of, "report")


@routes.get(f"/v1/agents/{{agent:{KEY_ID}}}/card")
async def agent_card(request: web.Request) -> web.Response:
    """The compact reputation card of the agent's report (public)."""
    return await _serve(request, _card, "card (an epoch built before cards were signed "
                        "has none until `bureau rebuild`)")
