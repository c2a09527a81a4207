"""Where signed reports and checkpoints are kept (SPEC §8): the ``seals``, ``reports``
and ``checkpoints`` tables, written once per epoch and read by the public routes.

A checkpoint row also says "this epoch's reports are complete": readers only ever see
reports of epochs that have one.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import asyncpg


@dataclass(frozen=True, slots=True)
class Seal:
    """A ``seal`` entry: epoch ``epoch`` covers every entry up to ``last_seq``."""

    epoch: int
    seq: int
    last_seq: int
    head: str


async def seals(conn: asyncpg.Connection, *, pending_only: bool = False) -> list[Seal]:
    rows = await conn.fetch(
        "SELECT s.epoch, s.seq, s.last_seq, s.head FROM seals s"
        + (" WHERE NOT EXISTS (SELECT 1 FROM checkpoints c WHERE c.epoch = s.epoch)"
           if pending_only else "") + " ORDER BY s.epoch")
    return [Seal(r["epoch"], r["seq"], r["last_seq"], r["head"]) for r in rows]



async def store_epoch(conn: asyncpg.Connection, epoch: int, agents: list[str],
                      envelopes: list[bytes], checkpoint: bytes) -> None:
    """Write one epoch's reports (COPY: the fastest way in) and then its checkpoint.
    If another writer stored this epoch first, COPY fails on the primary key and the
    caller's transaction rolls back: that writer's bytes are the same bytes."""
    await conn.copy_records_to_table(
        "reports", records=[(a, epoch, e) for a, e in zip(agents, envelopes, strict=True)],
        columns=("agent", "epoch", "envelope"))
    await store_checkpoint(conn, epoch, checkpoint)


async def store_checkpoint(conn: asyncpg.Connection, epoch: int, checkpoint: bytes) -> None:
    """Write an epoch's checkpoint: from then on its reports are served. Another
    writer's checkpoint of the same epoch is the same bytes."""
    await conn.execute("INSERT INTO checkpoints (epoch, envelope) VALUES ($1, $2)"
                       " ON CONFLICT DO NOTHING", epoch, checkpoint)


async def insert_reports(conn: asyncpg.Connection, epoch: int, agents: list[str],
                         envelopes: list[bytes]) -> None:
    """Write some of one epoch's reports, in a transaction of their own, by a report
    worker (bureau.views.shards). A report already there (a build that died before
    its checkpoint, or another writer) is the same bytes: it is left as it is."""
    await conn.execute(
        "INSERT INTO reports (agent, epoch, envelope) SELECT a, $2, e"
        " FROM unnest($1::text[], $3::bytea[]) AS t(a, e) ON CONFLICT DO NOTHING",
        agents, epoch, envelopes)


# --------------------------------------------------------------------------- reading


async def latest_epoch(conn: asyncpg.Connection) -> int | None:
    """The latest epoch whose reports are complete (it has a checkpoint)."""
    value: int | None = await conn.fetchval("SELECT max(epoch) FROM checkpoints")
    return value


async def report_envelope(conn: asyncpg.Connection, agent: str,
                          epoch: int | None) -> bytes | None:
    if epoch is None:
        row = await conn.fetchrow(
            "SELECT r.envelope FROM reports r WHERE r.agent = $1"
            " AND r.epoch = (SELECT max(epoch) FROM checkpoints)", agent)
    else:
        row = await conn.fetchrow(
            "SELECT r.envelope FROM reports r JOIN checkpoints c USING (epoch)"
            " WHERE r.agent = $1 AND r.epoch = $2", agent, epoch)
    return None if row is None else bytes(row["envelope"])


async def checkpoint_envelope(conn: asyncpg.Connection, epoch: int | None) -> bytes | None:
    if epoch is None:
        row = await conn.fetchrow(
            "SELECT envelope FROM checkpoints ORDER BY epoch DESC LIMIT 1")
    else:
        row = await conn.fetchrow("SELECT envelope FROM checkpoints WHERE epoch = $1", epoch)
    return None if row is None else bytes(row["envelope"])




@dataclass(frozen=True, slots=True)
class SealStatus:
    """How far sealing has got: what an operator alerts on (``bureau_seal_lag_seconds``)."""

    #: the latest epoch whose reports are published (it has a checkpoint)
    published: int | None
    #: the epoch of entry 1 (the first epoch that will need reports), None before it
    first: int | None
    #: when the latest seal entry was recorded
    sealed_at: dt.datetime | None

    def lag(self, now: dt.datetime, epoch_seconds: int) -> float:
        """Seconds since the end of the oldest elapsed epoch without published reports,
        0 when there is none (pure: the clock is the caller's)."""
        if self.first is None:
            return 0.0
        oldest = self.first if self.published is None else self.published + 1
        return max(0.0, now.timestamp() - (oldest + 1) * epoch_seconds)


async def seal_status(conn: asyncpg.Connection) -> SealStatus:
    row = await conn.fetchrow(
        "SELECT (SELECT max(epoch) FROM checkpoints) AS published,"
        " (SELECT epoch FROM entries WHERE seq = 1) AS first,"
        " (SELECT e.recorded_at FROM seals s JOIN entries e ON e.seq = s.seq"
        "  ORDER BY s.epoch DESC LIMIT 1) AS sealed_at")
    return SealStatus(row["published"], row["first"], row["sealed_at"])
