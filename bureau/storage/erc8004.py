"""ERC-8004 links the operator confirmed (migration 0015; bureau.interop.confirm)."""

from __future__ import annotations

import datetime as dt
from typing import NamedTuple

from bureau.storage import db


class Confirmed(NamedTuple):
    """One confirmation: the agent's link (registry, token id) and what confirmed it."""

    agent: str
    registry: str  # in lower case (an address's case is only its EIP-55 checksum)
    agent_id: str
    url: str  # where the registration file was read
    sha256: bytes  # of the bytes checked
    at: dt.datetime


async def record(conn: db.Connection, row: Confirmed) -> None:
    """Record (or record again) that the agent's link to the token is confirmed; the
    registry in lower case (an address's case is only its checksum: one registry)."""
    row = row._replace(registry=row.registry.lower())
    await conn.execute(
        "INSERT INTO erc8004_confirmations (agent, registry, agent_id, url, file_sha256,"
        " confirmed_at) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (agent, registry,"
        " agent_id) DO UPDATE SET url = $4, file_sha256 = $5, confirmed_at = $6", *row)


async def confirmed(conn: db.Connection, agent: str) -> frozenset[tuple[str, str]]:
    """The (registry, agent id) pairs of ``agent``'s links that are confirmed (one index
    range: an agent has at most 16 links)."""
    rows = await conn.fetch("SELECT registry, agent_id FROM erc8004_confirmations"
                            " WHERE agent = $1", agent)
    return frozenset((r["registry"], r["agent_id"]) for r in rows)
