"""Rows the public listings read, built once per epoch at seal time (issue 35).

``GET /v0/servers`` used to decode every linked report of the epoch in PostgreSQL on
every request, whatever ``limit`` said: enrolment is free, so 4,000 enrolments made one
``?limit=1`` cost 1.3–1.9 s and slowed every other route. Now :func:`build` runs once,
in the transaction that stores the epoch's checkpoint, and writes

* ``agent_summaries``: per agent whose report carries a link, its score and interval and
  its links;
* ``mcp_servers``: per linked MCP server name, how many agents claim it;
* ``mcp_claims``: per (name, agent), the index a page reads a bounded number of claims
  from.

Every read here is an index range with a ``LIMIT``: its cost is the page's, not the
epoch's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from bureau.storage import db

#: the payload of each of the epoch's reports that carries a link, decoded once
_SUMMARIES_SQL = """
INSERT INTO agent_summaries (epoch, agent, summary, links)
SELECT $1::bigint, agent,
       jsonb_build_object(
           'score', doc -> 'score' -> 'value',
           'interval', CASE WHEN jsonb_typeof(doc -> 'score') = 'object'
                            THEN jsonb_build_array(doc -> 'score' -> 'low',
                                                   doc -> 'score' -> 'high') END),
       doc -> 'links'
FROM (SELECT agent, convert_from(decode(convert_from(envelope, 'UTF8')::jsonb ->> 'payload',
                                        'base64'), 'UTF8')::jsonb AS doc
      FROM reports WHERE epoch = $1) AS r
WHERE jsonb_typeof(doc -> 'links') = 'array' AND jsonb_array_length(doc -> 'links') > 0
ON CONFLICT DO NOTHING
"""
_SERVERS_SQL = """
INSERT INTO mcp_servers (epoch, server, claims)
SELECT $1::bigint, link ->> 'server', count(DISTINCT agent)
FROM agent_summaries, jsonb_array_elements(links) AS link
WHERE epoch = $1 AND link ->> 'kind' = 'mcp'
GROUP BY link ->> 'server'
ON CONFLICT DO NOTHING
"""
_CLAIMS_SQL = """
INSERT INTO mcp_claims (epoch, server, agent)
SELECT DISTINCT $1::bigint, link ->> 'server', agent
FROM agent_summaries, jsonb_array_elements(links) AS link
WHERE epoch = $1 AND link ->> 'kind' = 'mcp'
ON CONFLICT DO NOTHING
"""


async def build(conn: db.Connection, epoch: int) -> None:
    """In the caller's transaction, after the epoch's reports are stored and before its
    checkpoint: the epoch's public rows. Another writer's rows are the same rows."""
    await conn.execute(_SUMMARIES_SQL, epoch)
    await conn.execute(_SERVERS_SQL, epoch)
    await conn.execute(_CLAIMS_SQL, epoch)


@dataclass(frozen=True, slots=True)
class ServerRow:
    name: str
    claims: int  # how many agents claim it


@dataclass(frozen=True, slots=True)
class ClaimRow:
    server: str
    agent: str
    summary: dict[str, Any]


async def servers(conn: db.Connection, epoch: int, after: str | None,
                  limit: int) -> list[ServerRow]:
    """Names after ``after``, by name, at most ``limit``."""
    rows = await conn.fetch(
        "SELECT server, claims FROM mcp_servers WHERE epoch = $1 AND server > $2"
        " ORDER BY server LIMIT $3", epoch, after or "", limit)
    return [ServerRow(r["server"], r["claims"]) for r in rows]


async def server(conn: db.Connection, epoch: int, name: str) -> ServerRow | None:
    row = await conn.fetchrow("SELECT server, claims FROM mcp_servers WHERE epoch = $1"
                              " AND server = $2", epoch, name)
    return None if row is None else ServerRow(row["server"], row["claims"])


async def claims(conn: db.Connection, epoch: int, names: list[str], after: str | None,
                 per_name: int) -> list[ClaimRow]:
    """For each name, its claims by agents after ``after``, by agent key id, at most
    ``per_name`` (one index range per name)."""
    rows = await conn.fetch(
        "SELECT n.server, c.agent, a.summary FROM unnest($2::text[]) AS n(server)"
        " CROSS JOIN LATERAL (SELECT agent FROM mcp_claims WHERE epoch = $1"
        "   AND server = n.server AND agent > $3 ORDER BY agent LIMIT $4) AS c"
        " JOIN agent_summaries a ON a.epoch = $1 AND a.agent = c.agent"
        " ORDER BY n.server, c.agent", epoch, names, after or "", per_name)
    return [ClaimRow(r["server"], r["agent"], json.loads(r["summary"])) for r in rows]


@dataclass(frozen=True, slots=True)
class Search:
    """A search of names: those holding ``text`` after ``after``, at most ``limit``,
    looking through at most ``window`` names."""

    text: str
    after: str | None
    limit: int
    window: int


async def search_servers(conn: db.Connection, epoch: int,
                         search: Search) -> tuple[list[ServerRow], str | None]:
    """Names holding the text among the window's: at most ``limit`` of them, and the
    last name looked at when the window was used up before ``limit`` were found (a
    reader goes on from there), else None."""
    text, after, limit, window = search.text, search.after, search.limit, search.window
    found = await conn.fetch(
        "SELECT server, claims FROM (SELECT server, claims FROM mcp_servers WHERE epoch = $1"
        " AND server > $2 ORDER BY server LIMIT $5) AS w WHERE strpos(server, $3) > 0"
        " ORDER BY server LIMIT $4", epoch, after or "", text, limit, window)
    rows = [ServerRow(r["server"], r["claims"]) for r in found]
    if len(rows) == limit:
        return rows, None
    seen = await conn.fetchrow(
        "SELECT count(*) AS n, max(server) AS last FROM (SELECT server FROM mcp_servers"
        " WHERE epoch = $1 AND server > $2 ORDER BY server LIMIT $3) AS w",
        epoch, after or "", window)
    return rows, seen["last"] if seen["n"] == window else None
