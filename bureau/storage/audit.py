"""What ``bureau verify`` reads (bureau.verify): every entry in seq order, the head, the
signed tree heads and every signed document, each in one query, in the caller's
repeatable-read transaction."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator, Collection
from dataclasses import dataclass
from typing import NamedTuple

from bureau.storage import db


@dataclass(frozen=True, slots=True)
class StoredRow:
    """A row of ``entries``: the indexed columns, and the entry's canonical bytes."""

    seq: int
    id: str
    prev: str
    kind: str
    entry: bytes
    recorded_at: dt.datetime | None = None
    epoch: int | None = None
    signer: str | None = None
    subject: str | None = None
    content_key: str | None = None


class Sealed(NamedTuple):
    """A report or a settlement, and the ledger position of its epoch's seal (the key
    in force there signs it)."""

    epoch: int
    #: the report's agent; None for a settlement
    agent: str | None
    envelope: bytes
    last_seq: int


async def entry_count(conn: db.Connection) -> int:
    return int(await conn.fetchval("SELECT count(*) FROM entries"))


async def ledger_head(conn: db.Connection) -> tuple[int, str] | None:
    """The ``ledger_head`` row (seq, head id)."""
    row = await conn.fetchrow("SELECT seq, head FROM ledger_head")
    return None if row is None else (row["seq"], row["head"])


async def tree_heads(conn: db.Connection) -> list[tuple[int, bytes, str]]:
    """Every signed tree head (size, root, note), smallest first."""
    return [(r["size"], bytes(r["root"]), r["note"]) for r in
            await conn.fetch("SELECT size, root, note FROM tree_heads ORDER BY size")]


async def entries(conn: db.Connection, batch: int) -> AsyncIterator[list[StoredRow]]:
    """Every entry in seq order, ``batch`` rows at a time, by one cursor (the caller
    holds a transaction)."""
    cursor = await conn.cursor(
        "SELECT seq, id, prev, kind, recorded_at, epoch, signer, subject,"
        " content_key, entry FROM entries ORDER BY seq")
    while rows := await cursor.fetch(batch):
        yield [StoredRow(r["seq"], r["id"], r["prev"], r["kind"], bytes(r["entry"]),
                         r["recorded_at"], r["epoch"], r["signer"], r["subject"],
                         r["content_key"]) for r in rows]


async def seq_and_subject(conn: db.Connection, ids: Collection[str],
                          ) -> dict[str, tuple[int, str | None]]:
    """The seq and subject of each entry of ``ids`` that exists, in one query."""
    return {r["id"]: (r["seq"], r["subject"]) for r in await conn.fetch(
        "SELECT id, seq, subject FROM entries WHERE id = ANY($1::text[])", sorted(ids))}


async def checkpoints(conn: db.Connection) -> list[tuple[int, bytes]]:
    """Every checkpoint (epoch, envelope): its payload names its own position."""
    return [(r["epoch"], bytes(r["envelope"]))
            for r in await conn.fetch("SELECT epoch, envelope FROM checkpoints")]


async def reports(conn: db.Connection) -> list[Sealed]:
    """Every report, with its epoch's seal position (every report of an epoch the same)."""
    return [Sealed(r["epoch"], r["agent"], bytes(r["envelope"]), r["last_seq"])
            for r in await conn.fetch(
                "SELECT r.epoch, r.agent, r.envelope, s.last_seq FROM reports r"
                " JOIN seals s USING (epoch) ORDER BY r.epoch, r.agent")]


async def settlements(conn: db.Connection) -> list[Sealed]:
    """Every settlement, with its epoch's seal position."""
    return [Sealed(r["epoch"], None, bytes(r["envelope"]), r["last_seq"])
            for r in await conn.fetch(
                "SELECT t.epoch, t.envelope, s.last_seq FROM settlements t"
                " JOIN seals s USING (epoch) ORDER BY t.epoch")]
