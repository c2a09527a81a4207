"""``bureau-check links``: confirm, from the other side, the links an agent's verified
report carries (SPEC §3 r3: a link is the agent's own claim).

1. the report is verified first (steps 1-5 of ``report``), and its ``links`` read;
2. each ``a2a`` link: the card at its URL, fetched over HTTPS, names the agent's key id
   in the bureau extension or a signature (:func:`reporters.interop.card_names_key`);
3. each ``mcp`` link: the MCP registry's entry for the server name has the key id in a
   ``_meta`` (:func:`reporters.interop.meta_names_key`);
4. each ``erc8004`` link: nothing here talks to a chain; the output says what to look up.

A link the other side does not confirm fails the check (exit 1); one that could not be
fetched makes it inconclusive (exit 2) unless another link failed.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import aiohttp

from reporters import strictjson
from reporters._internal.capped import TooLarge, read_capped
from reporters.check.bureau import CannotCheck, CheckFailed
from reporters.check.checks import Checking, Outcome, check_report
from reporters.interop import card_names_key, erc8004_lookup, meta_names_key

#: the official MCP registry, where an ``mcp`` link's server is looked up by default
MCP_REGISTRY = "https://registry.modelcontextprotocol.io"
#: an agent card or registry answer larger than this is not read
MAX_DOCUMENT = 1 << 20


@dataclass(frozen=True)
class Fetching:
    """How the other sides are reached: the MCP registry, the TLS trust, the timeout."""

    mcp_registry: str = MCP_REGISTRY
    ssl_context: ssl.SSLContext | None = None
    timeout: float = 30.0


async def _fetch_json(session: aiohttp.ClientSession, url: str, how: Fetching) -> Any:
    """The JSON document at ``url``, or :class:`CannotCheck` saying why not."""
    try:
        async with session.get(url, ssl=how.ssl_context if how.ssl_context else True,
                               timeout=aiohttp.ClientTimeout(total=how.timeout),
                               allow_redirects=False) as resp:
            if resp.status != 200:
                raise CannotCheck(f"{url}: HTTP {resp.status}")
            # the whole document, up to the cap (``content.read(n)`` returned what had
            # arrived so far: a card in several TLS records read as cut short)
            body = await read_capped(resp, MAX_DOCUMENT)
    except TooLarge:
        raise CannotCheck(f"{url}: more than {MAX_DOCUMENT} bytes") from None
    except (aiohttp.ClientError, TimeoutError, OSError, ssl.SSLError) as exc:
        raise CannotCheck(f"{url}: unreachable ({exc.__class__.__name__})") from None
    try:
        return strictjson.loads(body)  # bounded nesting: no RecursionError from a card
    except ValueError:
        raise CannotCheck(f"{url} did not answer JSON") from None


async def _one_link(session: aiohttp.ClientSession, link: Mapping[str, Any], agent: str,
                    how: Fetching) -> dict[str, Any]:
    """One link's result: ``confirmed``, ``not_confirmed``, ``cannot_check`` or
    ``look_up`` (an ``erc8004`` link: what to look up on chain)."""
    kind = link.get("kind")
    try:
        if kind == "a2a":
            card = await _fetch_json(session, str(link["card"]), how)
            if card_names_key(card, agent):
                return {"result": "confirmed", "detail": f"the card at {link['card']} "
                        f"names {agent}"}
            return {"result": "not_confirmed", "detail": f"the card at {link['card']} names "
                    f"{agent} in no bureau extension and no signature"}
        if kind == "mcp":
            name = str(link["server"])
            url = f"{how.mcp_registry.rstrip('/')}/v0/servers/{quote(name, safe='')}"
            entry = await _fetch_json(session, url, how)
            if meta_names_key(entry, agent):
                return {"result": "confirmed", "detail": f"{url}: _meta names {agent}"}
            return {"result": "not_confirmed", "detail": f"{url}: no _meta names {agent}"}
        if kind == "erc8004":
            return {"result": "look_up",
                    "detail": erc8004_lookup(str(link["registry"]), str(link["agent_id"]),
                                             agent)}
    except CannotCheck as exc:
        return {"result": "cannot_check", "detail": str(exc)}
    return {"result": "cannot_check", "detail": f"a link of unknown kind {kind!r}"}


async def check_links(checking: Checking, agent: str, how: Fetching, *,
                      epoch: int | None = None) -> Outcome:
    """Steps 1-4 above."""
    out, report = await check_report(checking, agent, epoch=epoch, command="links")
    links = report.get("links")
    if not isinstance(links, list):
        raise CheckFailed("the report carries no links list")
    results = []
    for link in links:
        if isinstance(link, Mapping):
            results.append({"link": dict(link),
                            **await _one_link(checking.bureau.session, link, agent, how)})
    out.facts["links"] = results
    if not results:
        out.step("the report carries no links: nothing to confirm")
    for r in results:
        out.step(f"{r['link'].get('kind')} link: {r['result']}: {r['detail']}")
    failed = [r for r in results if r["result"] == "not_confirmed"]
    if failed:
        raise CheckFailed("; ".join(r["detail"] for r in failed))
    missing = [r for r in results if r["result"] == "cannot_check"]
    if missing:
        raise CannotCheck("; ".join(r["detail"] for r in missing))
    return out
