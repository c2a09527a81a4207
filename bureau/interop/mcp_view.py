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

Pure: a function of report payloads and the bureau's public URL.
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


def server_response(name: str, claims: list[Claim], epoch: int,
                    public_url: str) -> dict[str, Any]:
    """One ``ServerResponse`` of the registry API, with the bureau's ``_meta``."""
    rows = []
    for c in claims:
        score = c.report.get("score")
        rows.append({
            "agent": c.agent,
            "score": None if score is None else score["value"],
            "interval": None if score is None else [score["low"], score["high"]],
            "report": f"{public_url}/v1/agents/{c.agent}/report?epoch={epoch}",
            "page": f"{public_url}/agents/{c.agent}",
        })
    return {
        "server": {"$schema": SERVER_SCHEMA, "name": name, "description": DESCRIPTION,
                   "version": "unknown"},
        "_meta": {meta_key(public_url): {"epoch": epoch, "claims": rows}},
    }


def server_list(by_name: Mapping[str, list[Claim]], epoch: int, public_url: str, *,
                cursor: str | None, limit: int, search: str | None) -> dict[str, Any]:
    """One page of ``GET /v0/servers``: names after ``cursor`` (the last name of the
    page before: opaque to readers), those holding ``search`` if given, at most
    ``limit``; ``nextCursor`` only when more follow."""
    names = [n for n in by_name if (cursor is None or n > cursor)
             and (search is None or search in n)]
    page = names[:limit]
    metadata: dict[str, Any] = {"count": len(page)}
    if len(names) > limit:
        metadata["nextCursor"] = page[-1]
    return {"servers": [server_response(n, by_name[n], epoch, public_url) for n in page],
            "metadata": metadata}
