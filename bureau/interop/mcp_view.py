"""An MCP subregistry view (docs/interop.md, "MCP registry"): the servers that agents
linked (``mcp`` links), in the MCP registry API's shape (``GET /v0/servers``, one
``ServerResponse`` per server name: ``{"server": <server.json>, "_meta": {...}}``, and
``metadata.nextCursor`` / ``metadata.count`` pagination).

The bureau does not hold the server's own server.json: ``server`` carries what the
schema requires (``name``, ``description``, ``version``; ``version`` is ``"unknown"``)
and readers merge it with the upstream registry's entry. What the view adds is
``_meta["<reverse-DNS of the bureau>/reputation"]``: the sealed epoch and, for each agent
that linked the name, its score, interval and signed report. A link is the agent's own
claim; several agents may claim one name, and the view lists them all, by key id, never
ranked: a reader confirms the claim in the upstream entry's ``_meta``
(``bureau-check links``).

When one agent alone claims a name, its reputation card (docs/transparency.md, "Proof
bundles and cards": at most 4,000 bytes, verifiable offline) is also put where a
server's publisher puts its own metadata, ``_meta["io.modelcontextprotocol.registry/
publisher-provided"]["agent-reputation-bureau"]`` (``{"agent", "card"}``, within the
registry's 4,096 bytes): what the agent can copy into its own server.json. Several
claims are each other's rivals, none is the publisher: no card goes there, and each
claim row names its card's URL.

Pure: a function of report payloads, cards and the bureau's public URL.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

SERVER_SCHEMA = "https://static.modelcontextprotocol.io/schemas/2025-09-29/server.schema.json"
DEFAULT_LIMIT = 30
MAX_LIMIT = 100
DESCRIPTION = "Reputation from an Agent Reputation Bureau: the agents' own claims, see _meta"
PUBLISHER_PROVIDED = "io.modelcontextprotocol.registry/publisher-provided"
#: the key of the bureau's object in the publisher-provided metadata (docs/interop.md)
PUBLISHER_KEY = "agent-reputation-bureau"


def namespace(public_url: str) -> str:
    """The reverse-DNS name of the bureau, from its public URL's host
    (``https://bureau.example.com`` → ``com.example.bureau``)."""
    host = urlsplit(public_url).hostname or ""
    return ".".join(reversed(host.split(".")))


def meta_key(public_url: str) -> str:
    return f"{namespace(public_url)}/reputation"


@dataclass(frozen=True, slots=True)
class Claim:
    """One agent's report, for one server name it linked."""

    server: str
    agent: str
    report: Mapping[str, Any]


def claims_of(reports: Iterable[Mapping[str, Any]]) -> dict[str, list[Claim]]:
    """Server name → the claims on it, each list by agent key id."""
    out: dict[str, list[Claim]] = {}
    for report in reports:
        names = {link["server"] for link in report.get("links") or ()
                 if link.get("kind") == "mcp"}
        for name in names:
            out.setdefault(name, []).append(Claim(name, report["agent"], report))
    for claims in out.values():
        claims.sort(key=lambda c: c.agent)
    return dict(sorted(out.items()))


def sole_claimant(claims: list[Claim]) -> str | None:
    """The agent whose card goes in the publisher-provided metadata: the only claimant."""
    return claims[0].agent if len(claims) == 1 else None


def page_names(by_name: Mapping[str, list[Claim]], *, cursor: str | None, limit: int,
               search: str | None) -> tuple[list[str], bool]:
    """The names of one page (after ``cursor``, holding ``search``, at most ``limit``)
    and whether more follow."""
    names = [n for n in by_name if (cursor is None or n > cursor)
             and (search is None or search in n)]
    return names[:limit], len(names) > limit


def server_response(name: str, claims: list[Claim], epoch: int, public_url: str,
                    cards: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """One ``ServerResponse`` of the registry API, with the bureau's ``_meta`` (and the
    sole claimant's card from ``cards``, by agent, when there is one)."""
    rows = []
    for c in claims:
        score = c.report.get("score")
        rows.append({
            "agent": c.agent,
            "score": None if score is None else score["value"],
            "interval": None if score is None else [score["low"], score["high"]],
            "report": f"{public_url}/v1/agents/{c.agent}/report?epoch={epoch}",
            "card": f"{public_url}/v1/agents/{c.agent}/card?epoch={epoch}",
            "page": f"{public_url}/agents/{c.agent}",
        })
    meta: dict[str, Any] = {meta_key(public_url): {"epoch": epoch, "claims": rows}}
    sole = sole_claimant(claims)
    if sole is not None and cards is not None and sole in cards:
        meta[PUBLISHER_PROVIDED] = {PUBLISHER_KEY: {"agent": sole, "card": dict(cards[sole])}}
    return {
        "server": {"$schema": SERVER_SCHEMA, "name": name, "description": DESCRIPTION,
                   "version": "unknown"},
        "_meta": meta,
    }


def server_list(by_name: Mapping[str, list[Claim]], epoch: int, public_url: str, *,
                cursor: str | None, limit: int, search: str | None,
                cards: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """One page of ``GET /v0/servers``: names after ``cursor`` (the last name of the
    page before: opaque to readers), those holding ``search`` if given, at most
    ``limit``; ``nextCursor`` only when more follow."""
    page, more = page_names(by_name, cursor=cursor, limit=limit, search=search)
    metadata: dict[str, Any] = {"count": len(page)}
    if more:
        metadata["nextCursor"] = page[-1]
    return {"servers": [server_response(n, by_name[n], epoch, public_url, cards)
                        for n in page],
            "metadata": metadata}
