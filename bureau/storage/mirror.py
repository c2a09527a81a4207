"""What the static mirror's task asks each tick to know whether there is anything to
write (bureau.mirror.sync): one statement, three aggregates on primary keys."""

from __future__ import annotations

from typing import NamedTuple

from bureau.storage import db
from bureau.storage.reports import Seal


class Published(NamedTuple):
    """The latest published head's size, how many cosignatures were kept from size
    ``since`` on, and the latest epoch whose reports are complete."""

    size: int | None
    cosignatures: int
    epoch: int | None


async def published(conn: db.Connection, since: int) -> Published:
    row = await conn.fetchrow(
        "SELECT (SELECT max(size) FROM tree_heads) AS size,"
        " (SELECT count(*) FROM cosignatures WHERE size >= $1) AS cosignatures,"
        " (SELECT max(epoch) FROM checkpoints) AS epoch", since)
    assert row is not None
    return Published(row["size"], row["cosignatures"], row["epoch"])


async def seals_after(conn: db.Connection, epoch: int | None) -> list[Seal]:
    """The seals of the published epochs after ``epoch`` (all, with None), oldest first."""
    rows = await conn.fetch(
        "SELECT s.epoch, s.seq, s.last_seq, s.head FROM seals s JOIN checkpoints c"
        " USING (epoch) WHERE $1::bigint IS NULL OR s.epoch > $1 ORDER BY s.epoch", epoch)
    return [Seal(r["epoch"], r["seq"], r["last_seq"], r["head"]) for r in rows]
