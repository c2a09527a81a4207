"""The ``cards`` table (migrations/0016_cards.sql): each report's signed card statement,
written with its epoch, and what a bundle, a card or the static mirror reads of an
epoch's documents."""

from __future__ import annotations

from typing import NamedTuple

from bureau.storage import db


async def store(conn: db.Connection, epoch: int, agents: list[str],
                envelopes: list[bytes]) -> None:
    """Write one epoch's card statements, in the caller's transaction: the one that
    stores the epoch's checkpoint. Another writer's are the same bytes: a statement
    already there is left as it is."""
    await conn.execute(
        "INSERT INTO cards (epoch, agent, envelope) SELECT $1, a, e"
        " FROM unnest($2::text[], $3::bytea[]) AS t(a, e) ON CONFLICT DO NOTHING",
        epoch, agents, envelopes)


async def card_envelope(conn: db.Connection, agent: str, epoch: int) -> bytes | None:
    found = await conn.fetchval("SELECT envelope FROM cards WHERE epoch = $1 AND agent = $2",
                                epoch, agent)
    return None if found is None else bytes(found)


async def card_envelopes(conn: db.Connection, agents: list[str], epoch: int
                         ) -> dict[str, bytes]:
    """The card statements of ``agents`` at ``epoch`` that exist, by agent."""
    rows = await conn.fetch("SELECT agent, envelope FROM cards WHERE epoch = $1"
                            " AND agent = ANY($2::text[])", epoch, agents)
    return {r["agent"]: bytes(r["envelope"]) for r in rows}


class EpochDocuments(NamedTuple):
    """One agent's report and card statement (None before cards were signed) of an
    epoch."""

    agent: str
    report: bytes
    card: bytes | None


async def epoch_documents(conn: db.Connection, epoch: int, after: str, limit: int
                          ) -> list[EpochDocuments]:
    """The reports and card statements of ``epoch`` of the agents after ``after`` (a key
    id; "" for the first), ``limit`` at most, by agent: the mirror's pages."""
    rows = await conn.fetch(
        "SELECT r.agent, r.envelope AS report, c.envelope AS card FROM reports r"
        " LEFT JOIN cards c ON c.epoch = r.epoch AND c.agent = r.agent"
        " WHERE r.epoch = $1 AND r.agent > $2 ORDER BY r.agent LIMIT $3", epoch, after, limit)
    return [EpochDocuments(r["agent"], bytes(r["report"]),
                           None if r["card"] is None else bytes(r["card"])) for r in rows]
