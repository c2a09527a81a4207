"""Public reads in the formats readers outside the bureau use (docs/interop.md).

* ``GET /v1/agents/{agent}/erc8004[?epoch=E]`` — the ERC-8004 feedback of the agent's
  report at ``E`` (default: the latest sealed), for each of its ``erc8004`` links: each
  file, its ``feedbackHash`` and the ``giveFeedback`` calldata.
* ``GET /v1/erc8004/{agent}.{epoch}.{registry}.{agent_id}.{tag}.json`` — one feedback
  file, the very bytes its ``feedbackHash`` is the keccak-256 of.
* ``GET /v1/agents/{agent}/a2a-extension`` — the A2A agent card extension object, with
  the agent's latest reputation card in ``params.card`` once it has a report.
* ``GET /v0/servers``, ``GET /v0/servers/{name}[?cursor=]`` — the MCP subregistry view,
  read from rows built at seal time, a bounded page at a time (bureau.interop.mcp_pages);
  a sole claimant's card in the publisher-provided ``_meta`` (bureau.interop.mcp_view),
  read for the page's sole claimants only (bureau.reads.portable).

They need ``BUREAU_PUBLIC_URL`` (every one names the bureau's address) and the ERC-8004
ones ``BUREAU_ETH_ADDRESS``; without it they answer ``404 NOT_FOUND`` saying which.
"""

from __future__ import annotations

import re
from typing import Any

from aiohttp import web

from bureau.errors import BureauError, Code, pointer
from bureau.http.errors import error_response
from bureau.http.keys import CONFIG, LOG_KEY, READS
from bureau.http.pages import payload_of
from bureau.http.params import KEY_ID
from bureau.interop import mcp_view
from bureau.interop.mcp_pages import server_entry, servers_page
from bureau.reads.portable import card_of, cards_of
from bureau.replica import absent
from bureau.storage import erc8004 as erc8004_store
from bureau.storage.reports import report_envelope
from reporters.identity_links import McpLink
from reporters.interop import card_extension

routes = web.RouteTableDef()

_LATEST = {"Cache-Control": "public, max-age=60"}
_IMMUTABLE = {"Cache-Control": "public, max-age=31536000, immutable"}
_DIGITS = re.compile(r"^(0|[1-9][0-9]{0,17})$")


def _epoch(request: web.Request) -> int | None:
    """``?epoch=E`` (SPEC §9 r3: ASCII digits, no sign, no leading zero); None when absent."""
    for name in sorted(set(request.query) - {"epoch"}):
        raise BureauError(Code.SCHEMA, pointer(name), f"unknown query parameter {name}")
    text = _one(request, "epoch")
    if text is None:
        return None
    if not _DIGITS.fullmatch(text):
        raise BureauError(Code.SCHEMA, pointer("epoch"), "epoch must be a whole number, "
                          "written in digits without a sign or a leading zero")
    return int(text)


def _public_url(request: web.Request) -> str:
    url = request.app[CONFIG].public_url
    if url is None:
        raise BureauError(Code.NOT_FOUND, "", "this bureau has no public URL "
                          "(BUREAU_PUBLIC_URL): it serves no views for other registries")
    return url


def _erc8004_bureau(request: web.Request) -> Any:
    address = request.app[CONFIG].eth_address
    if address is None:
        raise BureauError(Code.NOT_FOUND, "", "this bureau publishes no ERC-8004 feedback "
                          "(BUREAU_ETH_ADDRESS is not set)")
    # the erc8004 extra, present whenever the address is set (its check needs eth-utils)
    from bureau.interop import erc8004

    return erc8004, erc8004.Bureau(_public_url(request), address)


async def _report(request: web.Request, agent: str, epoch: int | None) -> dict[str, Any]:
    body = await request.app[READS].run(lambda conn: report_envelope(conn, agent, epoch),
                                        missing=absent)
    if body is None:
        where = "at the latest sealed epoch" if epoch is None else f"at epoch {epoch}"
        raise BureauError(Code.NOT_FOUND, "", f"no report for {agent} {where}")
    return payload_of(body)


@routes.get(f"/v1/agents/{{agent:{KEY_ID}}}/erc8004")
async def agent_erc8004(request: web.Request) -> web.Response:
    """The ERC-8004 feedback of the agent's report (public)."""
    try:
        epoch = _epoch(request)
        erc8004, bureau = _erc8004_bureau(request)
        agent = request.match_info["agent"]
        report = await _report(request, agent, epoch)
        confirmed = await request.app[READS].run(lambda conn: erc8004_store.confirmed(
            conn, agent))
        offer = erc8004.Offer(confirmed, request.app[CONFIG].erc8004_unconfirmed_calldata)
        doc = erc8004.feedback_document(report, bureau, request.app[CONFIG].epoch_seconds,
                                        offer)
        if not doc["feedback"]:
            raise BureauError(Code.NOT_FOUND, "", "the report carries no erc8004 link, "
                              "or no figure to give as feedback")
    except BureauError as err:
        return error_response(err)  # a bad read is not a refused envelope
    return web.json_response(doc, headers=_LATEST if epoch is None else _IMMUTABLE)


# One path segment, checked in the handler: a route with several parameters makes a
# hostile URL longer than aiohttp reads (8,190 bytes), which it answers in no error shape.
@routes.get("/v1/erc8004/{file:[A-Za-z0-9_:.-]{1,300}}")
async def erc8004_file(request: web.Request) -> web.Response:
    """One feedback file, byte for byte as its feedbackHash was computed (public)."""
    try:
        erc8004, bureau = _erc8004_bureau(request)
        name = erc8004.FILE_NAME.fullmatch(request.match_info["file"])
        if name is None:  # the path first, as every route (tests/reads/test_path_params.py)
            raise BureauError(Code.NOT_FOUND, "", "not the name of a feedback file")
        if request.query:
            first = sorted(request.query)[0]
            raise BureauError(Code.SCHEMA, pointer(first), f"unknown query parameter {first}")
        agent, epoch, registry, agent_id, tag = name.groups()
        report = await _report(request, agent, int(epoch))
        found = [f for f in erc8004.feedback_files(report, bureau,
                                                   request.app[CONFIG].epoch_seconds)
                 if (f.registry, f.agent_id, f.tag1) == (registry, agent_id, tag)]
        if not found:
            raise BureauError(Code.NOT_FOUND, "", "no such feedback file in that report")
    except BureauError as err:
        return error_response(err)
    return web.Response(body=found[0].body, content_type="application/json",
                        headers=_IMMUTABLE)


@routes.get(f"/v1/agents/{{agent:{KEY_ID}}}/a2a-extension")
async def agent_a2a_extension(request: web.Request) -> web.Response:
    """The object an agent adds to its A2A card's ``capabilities.extensions`` (public)."""
    try:
        if request.query:
            name = sorted(request.query)[0]
            raise BureauError(Code.SCHEMA, pointer(name), f"unknown query parameter {name}")
        url = _public_url(request)
    except BureauError as err:
        return error_response(err)
    agent, origin = request.match_info["agent"], request.app[LOG_KEY].origin
    card = await request.app[READS].run(lambda conn: card_of(conn, agent, None, origin))
    return web.json_response(card_extension(url, request.app[LOG_KEY].vkey, agent, card),
                             headers=_LATEST)


def _one(request: web.Request, name: str) -> str | None:
    values = request.query.getall(name, [])
    if len(values) > 1:
        raise BureauError(Code.SCHEMA, pointer(name), f"{name} is given more than once")
    return values[0] if values else None


def _limit(request: web.Request) -> int:
    text = _one(request, "limit")
    if text is None:
        return mcp_view.DEFAULT_LIMIT
    if not _DIGITS.fullmatch(text) or not 1 <= int(text) <= mcp_view.MAX_LIMIT:
        raise BureauError(Code.SCHEMA, pointer("limit"),
                          f"limit must be a whole number from 1 to {mcp_view.MAX_LIMIT}")
    return int(text)


#: a control character: PostgreSQL's text cannot hold a NUL (the query failed with a 500),
#: and no name or key id holds any of them
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _text(request: web.Request, name: str, most: int) -> str | None:
    """A query text of at most ``most`` characters and no control character (a cursor is
    a name or a key id; both go to the database)."""
    text = _one(request, name)
    if text is not None and len(text) > most:
        raise BureauError(Code.SCHEMA, pointer(name), f"{name} is at most {most} characters")
    if text is not None and _CONTROL.search(text):
        raise BureauError(Code.SCHEMA, pointer(name), f"{name} holds a control character")
    return text


def _nothing_sealed() -> BureauError:
    return BureauError(Code.NOT_FOUND, "", "no epoch is sealed yet")


@routes.get("/v0/servers")
async def mcp_servers(request: web.Request) -> web.Response:
    """The MCP servers agents linked, in the MCP registry API's shape (public)."""
    try:
        for name in sorted(set(request.query) - {"cursor", "limit", "search"}):
            raise BureauError(Code.SCHEMA, pointer(name), f"unknown query parameter {name}")
        cursor, search = _text(request, "cursor", 200), _text(request, "search", 200)
        limit = _limit(request)
        url = _public_url(request)
        page = await request.app[READS].run(
            lambda conn: servers_page(conn, cursor, limit, search), missing=absent)
        if page is None:
            raise _nothing_sealed()
    except BureauError as err:
        return error_response(err)
    cards = await _cards(request, page.epoch, page.entries)
    return web.json_response(mcp_view.server_list(page.entries, page.epoch, url,
                                                  next_cursor=page.next_cursor, cards=cards),
                             headers=_LATEST)


async def _cards(request: web.Request, epoch: int, entries: list[mcp_view.Entry]
                 ) -> dict[str, dict[str, Any]]:
    """The cards of the sole claimants of a page's ``entries`` (bureau.reads.portable):
    one epoch proof and one query, whatever the epoch holds."""
    budgets = {a: mcp_view.card_budget(a) for e in entries
               if (a := mcp_view.sole_claimant(e)) is not None}
    origin = request.app[LOG_KEY].origin
    return await request.app[READS].run(lambda conn: cards_of(conn, budgets, epoch, origin))


@routes.get("/v0/servers/{name:.+}")
async def mcp_server(request: web.Request) -> web.Response:
    """One linked MCP server by its (URL-encoded) name (public)."""
    name = request.match_info["name"]
    try:
        McpLink.model_validate({"kind": "mcp", "server": name})  # the path first
        for extra in sorted(set(request.query) - {"cursor"}):
            raise BureauError(Code.SCHEMA, pointer(extra), f"unknown query parameter {extra}")
        cursor = _text(request, "cursor", 100)
        url = _public_url(request)
        found = await request.app[READS].run(
            lambda conn: server_entry(conn, name, cursor), missing=absent)
        if found is None:
            raise _nothing_sealed()
        epoch, entry = found
        if entry is None:
            raise BureauError(Code.NOT_FOUND, "", "no agent links an MCP server of that name")
    except ValueError:
        return error_response(BureauError(Code.NOT_FOUND, "", "not an MCP server name"))
    except BureauError as err:
        return error_response(err)
    cards = await _cards(request, epoch, [entry])
    return web.json_response(mcp_view.server_response(entry, epoch, url, cards),
                             headers=_LATEST)
