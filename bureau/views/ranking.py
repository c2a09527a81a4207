"""The public list of agents (the home page): the latest sealed epoch's reports, ranked
by ``score.low`` (SPEC §8: an agent known from little evidence never outranks a long
good record), searchable by name or key, a page at a time.

It reads the signed reports themselves, decoding their payloads in PostgreSQL, so the
list can never say anything the reports do not. The cost is one decode per report of
the epoch per page view (docs/operations.md#public-pages gives the figure).
"""

from __future__ import annotations

from dataclasses import dataclass

import asyncpg

#: agents on one page of the list
PAGE_SIZE = 50
#: the longest search text taken
MAX_QUERY = 200


@dataclass(frozen=True, slots=True)
class Ranked:
    """One row of the list: what the agent's signed report says."""

    agent: str
    name: str | None
    value: float | None
    low: float | None
    high: float | None
    interactions: int | None


@dataclass(frozen=True, slots=True)
class RankedPage:
    epoch: int | None  # None: no epoch sealed yet
    rows: list[Ranked]
    more: bool  # a next page exists


_QUERY = """
WITH decoded AS (
    SELECT r.agent, convert_from(decode(
        convert_from(r.envelope, 'UTF8')::jsonb ->> 'payload', 'base64'), 'UTF8')::jsonb AS p
    FROM reports r WHERE r.epoch = $4)
SELECT agent, p ->> 'name' AS name, (p -> 'score' ->> 'value')::float8 AS value,
       (p -> 'score' ->> 'low')::float8 AS low, (p -> 'score' ->> 'high')::float8 AS high,
       (p -> 'score' ->> 'interactions')::bigint AS interactions
FROM decoded
WHERE $1::text IS NULL OR strpos(lower(coalesce(p ->> 'name', '')), lower($1)) > 0
      OR strpos(agent, $1) > 0
ORDER BY low DESC NULLS LAST, agent
LIMIT $2 OFFSET $3
"""


async def ranked_page(conn: asyncpg.Connection, query: str | None, page: int) -> RankedPage:
    """Page ``page`` (from 1) of the ranked list, of the agents whose name contains
    ``query`` (case aside) or whose key contains it; every agent when it is None."""
    epoch: int | None = await conn.fetchval("SELECT max(epoch) FROM checkpoints")
    if epoch is None:
        return RankedPage(None, [], False)
    rows = await conn.fetch(_QUERY, query, PAGE_SIZE + 1, (page - 1) * PAGE_SIZE, epoch)
    ranked = [Ranked(r["agent"], r["name"], r["value"], r["low"], r["high"],
                     r["interactions"]) for r in rows[:PAGE_SIZE]]
    return RankedPage(epoch, ranked, len(rows) > PAGE_SIZE)
