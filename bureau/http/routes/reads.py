"""Reads (SPEC §9): the bureau's public documents, and each party's own file.

* ``GET /v1/bureau``, ``GET /v1/policy``, ``GET /v1/policies/{hash}``,
  ``GET /openapi.json`` — public.
* ``GET /v1/agents/{agent}/entries`` — that agent, or an admin.
* ``GET /v1/reporters/{reporter}/entries`` — that reporter, or an admin.
* ``GET /v1/agents/{agent}/explain[?epoch=E]`` — that agent, or an admin.
* ``GET /v1/agents/{agent}/evaluator[?epoch=E]`` — that agent, or an admin.

Authenticated reads check, in this order: the shape of the key in the path (the
route's pattern, :mod:`bureau.http.params`: 404 from the router), the signature (401),
the reader (403), the key in the path being a valid point (404; only an admin gets that
far with one that is not), then the query (422 ``SCHEMA``, ``path`` naming the
parameter). docs/reading.md describes the shapes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from aiohttp import web

from bureau.errors import BureauError, Code, pointer
from bureau.evidence.policies import current_policy
from bureau.http.auth import require_party
from bureau.http.errors import error_response
from bureau.http.keys import COMMITTER, CONFIG, DB_POOL, LOG_KEY, OPENAPI, READS
from bureau.http.params import KEY_ID, is_hex64, number
from bureau.reads import pages
from bureau.reads.evaluator import evaluator_record
from bureau.reads.explain import explain
from bureau.reads.published import bureau_document
from bureau.replica import absent
from bureau.scoring.policy import KNOWN_POLICIES, policy_bytes, policy_name_of
from bureau.storage import db
from reporters import wire

routes = web.RouteTableDef()

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000
_PRIVATE = {"Cache-Control": "private, no-store"}


@dataclass(frozen=True, slots=True)
class PageQuery:
    """``?after=SEQ&limit=N&refusals_after=REF``, checked."""

    after: int
    limit: int
    refusals_after: int


def _param(request: web.Request, name: str, default: int, low: int, high: int) -> int:
    values = request.query.getall(name, [])
    if not values:
        return default
    if len(values) > 1:
        raise BureauError(Code.SCHEMA, pointer(name), f"{name} is given more than once")
    value = number(values[0])
    if value is None or not low <= value <= high:
        raise BureauError(Code.SCHEMA, pointer(name),
                          f"{name} must be a whole number from {low} to {high}, in ASCII "
                          "digits without a sign or leading zeros")
    return value


def page_query(request: web.Request) -> PageQuery:
    for name in sorted(set(request.query) - {"after", "limit", "refusals_after"}):
        raise BureauError(Code.SCHEMA, pointer(name), f"unknown query parameter {name}")
    cursor_max = 10**18 - 1
    return PageQuery(after=_param(request, "after", 0, 0, cursor_max),
                     limit=_param(request, "limit", DEFAULT_LIMIT, 1, MAX_LIMIT),
                     refusals_after=_param(request, "refusals_after", 0, 0, cursor_max))


async def _party(request: web.Request, name: str) -> tuple[str, str]:
    """The key the path names, once the reader may read it, and the reader's key."""
    party = request.match_info[name]
    reader = await require_party(request, party)
    try:
        wire.public_key_from_key_id(party)
    except wire.WireError:
        raise BureauError(Code.NOT_FOUND, "", f"no such {name}: not a key id") from None
    return party, reader


class Reader(Protocol):
    def __call__(self, conn: db.Connection, party: str, /, *, after: int, limit: int,
                 refusals_after: int) -> Awaitable[pages.Page]: ...


async def _file(request: web.Request, name: str, read: Reader) -> web.Response:
    party, reader = await _party(request, name)
    try:
        query = page_query(request)
    except BureauError as err:
        # Answered here, not raised: a bad query is not a refused envelope, and the
        # middleware would count it in bureau_refusals_total.
        return error_response(err)
    # Read-your-writes (bureau.replica): the party's latest submissions and refusals,
    # and the reader's (an admin reading after excluding one of the party's entries),
    # are in the page.
    page = await request.app[READS].run_after(
        (party, reader), lambda conn: read(conn, party, after=query.after, limit=query.limit,
                                           refusals_after=query.refusals_after))
    return web.json_response(page.as_body(), headers=_PRIVATE)


@routes.get(f"/v1/agents/{{agent:{KEY_ID}}}/entries")
async def agent_entries(request: web.Request) -> web.Response:
    """Every entry about the agent, and its refusals (that agent or an admin)."""
    return await _file(request, "agent", pages.agent_page)


@routes.get(f"/v1/reporters/{{reporter:{KEY_ID}}}/entries")
async def reporter_entries(request: web.Request) -> web.Response:
    """What the reporter submitted, and its refusals (that reporter or an admin)."""
    return await _file(request, "reporter", pages.reporter_page)


#: (connection, agent, epoch or None) -> the body, or None when there is nothing to show
EpochRead = Callable[[db.Connection, str, "int | None"], Awaitable["dict[str, Any] | None"]]


async def _agent_epoch_read(request: web.Request, compute: EpochRead,
                            missing: str) -> web.Response:
    """An agent's own read of something as of a sealed epoch (``?epoch=E``)."""
    agent, _ = await _party(request, "agent")
    try:
        epoch = epoch_query(request)
    except BureauError as err:
        return error_response(err)
    body = await request.app[READS].run(lambda conn: compute(conn, agent, epoch),
                                        missing=absent)
    if body is None:
        return error_response(BureauError(Code.NOT_FOUND, "", missing))
    return web.json_response(body, headers=_PRIVATE)


@routes.get(f"/v1/agents/{{agent:{KEY_ID}}}/explain")
async def agent_explain(request: web.Request) -> web.Response:
    """How the agent's score was made (that agent or an admin)."""
    return await _agent_epoch_read(request, explain, "no report to explain")


@routes.get(f"/v1/agents/{{agent:{KEY_ID}}}/evaluator")
async def agent_evaluator(request: web.Request) -> web.Response:
    """The agent's record as an evaluator as of a sealed epoch (that agent or an admin)."""
    epoch_seconds = request.app[CONFIG].epoch_seconds

    async def compute(conn: db.Connection, agent: str,
                      epoch: int | None) -> dict[str, Any] | None:
        return await evaluator_record(conn, agent, epoch, epoch_seconds)

    return await _agent_epoch_read(request, compute, "no such sealed epoch")


def epoch_query(request: web.Request) -> int | None:
    """``?epoch=E``, checked; None when absent."""
    for name in sorted(set(request.query) - {"epoch"}):
        raise BureauError(Code.SCHEMA, pointer(name), f"unknown query parameter {name}")
    if "epoch" not in request.query:
        return None
    return _param(request, "epoch", 0, 0, 10**18 - 1)


async def _current_policy(app: web.Application) -> str:
    # From the primary, never a replica: a policy entry may change the current epoch's
    # policy at once, and the admin who posted it reads it back here.
    async with app[DB_POOL].acquire() as conn:
        return await current_policy(conn, app[COMMITTER].clock(), app[CONFIG].epoch_seconds)


def _policy_document(digest: str) -> web.Response:
    name = policy_name_of(digest)
    if name is None:
        raise BureauError(Code.NOT_FOUND, "", "no policy this bureau knows has that hash")
    return web.Response(body=policy_bytes(KNOWN_POLICIES[name]),
                        content_type="application/json")


@routes.get("/v1/bureau")
async def bureau_info(request: web.Request) -> web.Response:
    """The bureau's signing key id in force, the current epoch's policy hash, its epoch
    length, the log's origin and note verifier key (the same key: SPEC §8.1), and
    *(r3)* the key history, oldest first, and the admin set in force."""
    config = request.app[CONFIG]
    async with request.app[DB_POOL].acquire() as conn:
        doc = await bureau_document(conn, origin=request.app[LOG_KEY].origin,
                                    epoch_seconds=config.epoch_seconds,
                                    eth_address=config.eth_address,
                                    now=request.app[COMMITTER].clock())
    return web.json_response(doc)


@routes.get("/v1/policy")
async def policy(request: web.Request) -> web.Response:
    """The current epoch's scoring policy: exactly the bytes whose BLAKE3 is
    ``/v1/bureau``'s ``policy``."""
    return _policy_document(await _current_policy(request.app))


# Alphanumeric up to 128 characters reaches the handler, which answers a malformed hash
# 422 SCHEMA at /hash (SPEC §9); anything else is no route's (404). No query either way.
@routes.get("/v1/policies/{hash:[0-9A-Za-z]{1,128}}")
async def policy_by_hash(request: web.Request) -> web.Response:
    """Any policy this bureau knows, by the hash reports name it by, byte for byte."""
    digest = request.match_info["hash"]
    try:
        if not is_hex64(digest):
            raise BureauError(Code.SCHEMA, pointer("hash"),
                              "a policy hash is 64 lowercase hexadecimal digits")
        return _policy_document(digest)
    except BureauError as err:
        # Answered here, not raised: a bad read is not a refused envelope.
        return error_response(err)


@routes.get("/openapi.json")
async def openapi(request: web.Request) -> web.Response:
    """The OpenAPI 3.1 description of every route this app serves."""
    return web.Response(body=request.app[OPENAPI], content_type="application/json")
