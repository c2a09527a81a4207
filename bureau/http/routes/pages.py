"""Pages for people (SPEC §9): ``GET /`` (the agents ranked, a search, the bureau's
public facts) and ``GET /agents/{agent}``. Public, HTML, no JavaScript; they show only
what the signed reports and checkpoints already say, and never a request header.

A page address with nothing behind it answers 404 as a page to a browser (``Accept``
naming ``text/html``) and in the one error shape to everyone else.
"""

from __future__ import annotations

import json

from aiohttp import web

from bureau.errors import BureauError, Code
from bureau.evidence.policies import current_policy
from bureau.http.errors import error_response
from bureau.http.home import Listing, index_page, not_found_page
from bureau.http.keys import COMMITTER, CONFIG, DB_POOL, RANKING, READS, SIGNING_KEY
from bureau.http.pages import PageSite, agent_page, payload_of
from bureau.http.params import KEY_ID, number
from bureau.http.settlement_page import SHOWN, settlements_section
from bureau.reads.ranking import MAX_QUERY
from bureau.replica import absent
from bureau.storage.reports import checkpoint_envelope, report_envelope
from bureau.storage.settlement import published_settlements
from reporters import wire

routes = web.RouteTableDef()

_HTML_HEADERS = {"Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'",
                 "X-Content-Type-Options": "nosniff"}
#: pages of the list a search can ask for (50 agents a page: half a million agents)
MAX_PAGE = 10_000


def _html(text: str, status: int = 200) -> web.Response:
    return web.Response(text=text, status=status, content_type="text/html", charset="utf-8",
                        headers=_HTML_HEADERS)


def _wants_html(request: web.Request) -> bool:
    return "text/html" in request.headers.get("Accept", "")


def _not_found(request: web.Request, detail: str) -> web.Response:
    if _wants_html(request):
        return _html(not_found_page(detail), status=404)
    return error_response(BureauError(Code.NOT_FOUND, "", detail))


def _query(request: web.Request) -> tuple[str | None, int]:
    """``?q=`` (a name or key to look for) and ``?page=`` (from 1), checked."""
    for name in ("q", "page"):
        if len(request.query.getall(name, [])) > 1:
            raise BureauError(Code.SCHEMA, f"/{name}", "given more than once")
    q = request.query.get("q", "").strip() or None
    if q is not None and (len(q) > MAX_QUERY or not q.isprintable()):
        raise BureauError(Code.SCHEMA, "/q", f"at most {MAX_QUERY} printable characters")
    page = number(request.query.get("page", "1"))
    if page is None or not 1 <= page <= MAX_PAGE:
        raise BureauError(Code.SCHEMA, "/page", f"a page number from 1 to {MAX_PAGE}, in "
                          "ASCII digits without a sign or leading zeros")
    return q, page


@routes.get("/")
async def index(request: web.Request) -> web.Response:
    """The agents ranked by score.low (searchable), the bureau's key, policy and latest
    checkpoint."""
    q, page = _query(request)
    cp = await request.app[READS].run(lambda conn: checkpoint_envelope(conn, None))
    ranked = await request.app[READS].run(lambda conn: request.app[RANKING].page(conn, q, page))
    # The current policy from the primary, as /v1/policy reads it (bureau.http.routes.reads).
    async with request.app[DB_POOL].acquire() as conn:
        policy = await current_policy(conn, request.app[COMMITTER].clock(),
                                      request.app[CONFIG].epoch_seconds)
    settled = await request.app[READS].run(lambda conn: published_settlements(conn, SHOWN))
    site = _site(request)
    return _html(index_page(site, policy, payload_of(cp) if cp is not None else None,
                            Listing(ranked, q, page), settlements_section(
                                [payload_of(s) for s in settled], site.epoch_seconds)))


@routes.get(f"/agents/{{agent:{KEY_ID}}}")
async def agent(request: web.Request) -> web.Response:
    """The agent's latest report, for a person to read."""
    key = request.match_info["agent"]
    envelope = await request.app[READS].run(lambda conn: report_envelope(conn, key, None),
                                            missing=absent)
    if envelope is None:
        return _not_found(request, f"No report for {key} yet")
    pretty = json.dumps(json.loads(envelope), indent=2).encode()
    return _html(agent_page(payload_of(envelope), pretty, _site(request)))


def _site(request: web.Request) -> PageSite:
    """What the pages say of this bureau, now."""
    config = request.app[CONFIG]
    return PageSite(wire.signing_key_id(request.app[SIGNING_KEY]), config.epoch_seconds,
                    config.public_url, request.app[COMMITTER].clock())
