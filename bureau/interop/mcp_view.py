"""An MCP subregistry view (docs/interop.md, "MCP registry"): the servers that agents
linked (``mcp`` links), in the MCP registry API's shape (``GET /v0/servers``, one
``ServerResponse`` per server name: ``{"server": <server.json>, "_meta": {...}}``, and
``metadata.nextCursor`` / ``metadata.count`` pagination).

The bureau does not hold the server's own server.json: ``server`` carries what the
schema requires (``name``, ``description``, ``version``; ``version`` is ``"unknown"``)
and readers merge it with the upstream registry's entry. What the view adds is
``_meta["<reverse-DNS of the bureau>/reputation"]``: the sealed epoch and, for each agent
that linked the name, its score, interval and signed report. A link is the agent's own
claim; several agents may claim one name, and the view lists them by key id, never
ranked: a reader confirms the claim in the upstream entry's ``_meta``
(``bureau-check links``).

Bounded (issue 35): a page reads only its own rows, built at seal time
(bureau.storage.public_rows); each entry shows at most :data:`CLAIMS_IN_LIST` claims
with ``claimsTotal`` and a ``claimsCursor``, so 4,000 claims of one name cost a page,
not a 1.2 MB answer.

When one agent alone claims a name, its reputation card (docs/transparency.md, "Proof
bundles and cards": at most 4,000 bytes, verifiable offline) is also put where a
server's publisher puts its own metadata, ``_meta["io.modelcontextprotocol.registry/
publisher-provided"]["agent-reputation-bureau"]`` (``{"agent", "card"}``, within the
registry's 4,096 bytes): what the agent can copy into its own server.json. Several
claims are each other's rivals, none is the publisher: no card goes there, and each
claim row names its card's URL.

Pure: a function of the page's rows, the cards of its sole claimants and the bureau's
public URL.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from reporters import wire
from reporters.portable import MAX_CARD_BYTES

SERVER_SCHEMA = "https://static.modelcontextprotocol.io/schemas/2025-09-29/server.schema.json"
DEFAULT_LIMIT = 30
MAX_LIMIT = 100
DESCRIPTION = "Reputation from an Agent Reputation Bureau: the agents' own claims, see _meta"
PUBLISHER_PROVIDED = "io.modelcontextprotocol.registry/publisher-provided"
#: the key of the bureau's object in the publisher-provided metadata (docs/interop.md)
PUBLISHER_KEY = "agent-reputation-bureau"
#: the registry's cap on a server's publisher-provided metadata, as compact JSON
PUBLISHER_PROVIDED_BYTES = 4096


def publisher_provided(agent: str, card: Mapping[str, Any]) -> dict[str, Any]:
    """The publisher-provided metadata that carries ``agent``'s card."""
    return {PUBLISHER_KEY: {"agent": agent, "card": dict(card)}}


def card_budget(agent: str) -> int:
    """The bytes ``agent``'s card may take for :func:`publisher_provided` to fit the
    registry's cap: a card may be 4,000 bytes, and what wraps it ~100 more."""
    wrapping = len(wire.canonical_json(publisher_provided(agent, {}))) - len(b"{}")
    return min(MAX_CARD_BYTES, PUBLISHER_PROVIDED_BYTES - wrapping)


def namespace(public_url: str) -> str:
    """The reverse-DNS name of the bureau, from its public URL's host
    (``https://bureau.example.com`` → ``com.example.bureau``)."""
    host = urlsplit(public_url).hostname or ""
    return ".".join(reversed(host.split(".")))


def meta_key(public_url: str) -> str:
    return f"{namespace(public_url)}/reputation"


#: claims shown with each name in a list; the rest are paged from ``/v0/servers/{name}``
CLAIMS_IN_LIST = 10
#: claims in one page of ``/v0/servers/{name}``
CLAIMS_PAGE = 50
#: names a search looks through for one page: a page may hold fewer matches than
#: ``limit`` (even none) and a ``nextCursor`` to go on
SEARCH_WINDOW = 5000


@dataclass(frozen=True, slots=True)
class Claim:
    """One agent's claim of a server name, as the epoch's public rows give it
    (bureau.storage.public_rows): its score and interval from its signed report."""

    agent: str
    summary: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Entry:
    """One server name of a page: how many agents claim it, and a page of the claims."""

    name: str
    claims_total: int
    claims: list[Claim]
    more: bool  # claims follow the last of ``claims``


def sole_claimant(entry: Entry) -> str | None:
    """The agent whose card goes in the publisher-provided metadata: the only claimant."""
    return entry.claims[0].agent if entry.claims_total == 1 and entry.claims else None


def server_response(entry: Entry, epoch: int, public_url: str,
                    cards: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """One ``ServerResponse`` of the registry API, with the bureau's ``_meta``: at most a
    page of the claims, by agent key id, how many there are, and where the next page is
    (``claimsCursor``, for ``/v0/servers/{name}?cursor=``); and the sole claimant's card
    from ``cards`` (by agent), when there is one."""
    rows = []
    for c in entry.claims:
        row = {
            "agent": c.agent,
            "score": c.summary.get("score"),
            "interval": c.summary.get("interval"),
            "report": f"{public_url}/v1/agents/{c.agent}/report?epoch={epoch}",
            "card": f"{public_url}/v1/agents/{c.agent}/card?epoch={epoch}",
            "page": f"{public_url}/agents/{c.agent}",
        }
        rows.append(row)
    meta: dict[str, Any] = {"epoch": epoch, "claims": rows, "claimsTotal": entry.claims_total}
    if entry.more and rows:
        meta["claimsCursor"] = rows[-1]["agent"]
    outer: dict[str, Any] = {meta_key(public_url): meta}
    sole = sole_claimant(entry)
    if sole is not None and cards is not None and sole in cards:
        outer[PUBLISHER_PROVIDED] = publisher_provided(sole, cards[sole])
    return {
        "server": {"$schema": SERVER_SCHEMA, "name": entry.name, "description": DESCRIPTION,
                   "version": "unknown"},
        "_meta": outer,
    }


def server_list(entries: list[Entry], epoch: int, public_url: str, *,
                next_cursor: str | None,
                cards: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """One page of ``GET /v0/servers``; ``nextCursor`` (the last name looked at: opaque
    to readers) only when more may follow; ``cards`` as :func:`server_response`'s."""
    metadata: dict[str, Any] = {"count": len(entries)}
    if next_cursor is not None:
        metadata["nextCursor"] = next_cursor
    return {"servers": [server_response(e, epoch, public_url, cards) for e in entries],
            "metadata": metadata}
