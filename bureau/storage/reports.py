"""Where signed reports and checkpoints are kept (SPEC §8): the ``seals``, ``reports``
and ``checkpoints`` tables, written once per epoch and read by the public routes.

A checkpoint row also says "this epoch's reports are complete": readers only ever see
reports of epochs that have one.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

import asyncpg

from bureau.storage import db, public_rows

#: what :func:`copy_reports` raises (out of the caller's transaction, which rolls back)
#: when another writer stored the epoch first: its bytes are the same bytes
AlreadyStored: type[Exception] = asyncpg.UniqueViolationError


@dataclass(frozen=True, slots=True)
class Seal:
    """A ``seal`` entry: epoch ``epoch`` covers every entry up to ``last_seq``."""

    epoch: int
    seq: int
    last_seq: int
    head: str


async def seals(conn: db.Connection, *, pending_only: bool = False) -> list[Seal]:
    rows = await conn.fetch(
        "SELECT s.epoch, s.seq, s.last_seq, s.head FROM seals s"
        + (" WHERE NOT EXISTS (SELECT 1 FROM checkpoints c WHERE c.epoch = s.epoch)"
           if pending_only else "") + " ORDER BY s.epoch")
    return [Seal(r["epoch"], r["seq"], r["last_seq"], r["head"]) for r in rows]



async def copy_reports(conn: db.Connection, epoch: int, agents: Sequence[str],
                       envelopes: Sequence[bytes]) -> None:
    """Write one epoch's reports (COPY: the fastest way in), in the caller's transaction
    (:func:`bureau.storage.epochs.store_epoch`). If another writer stored this epoch
    first, COPY fails on the primary key (:data:`AlreadyStored`) and the transaction
    rolls back: that writer's bytes are the same bytes."""
    await conn.copy_records_to_table(
        "reports", records=[(a, epoch, e) for a, e in zip(agents, envelopes, strict=True)],
        columns=("agent", "epoch", "envelope"))


async def insert_checkpoint(conn: db.Connection, epoch: int, checkpoint: bytes) -> None:
    """Write an epoch's checkpoint, with the rows the public listings read of it
    (:mod:`bureau.storage.public_rows`, built from its reports here, once), in the
    caller's transaction: from then on its reports are served. Another writer's
    checkpoint of the same epoch is the same bytes."""
    await public_rows.build(conn, epoch)
    await conn.execute("INSERT INTO checkpoints (epoch, envelope) VALUES ($1, $2)"
                       " ON CONFLICT DO NOTHING", epoch, checkpoint)


async def any_report(conn: db.Connection, epoch: int) -> bool:
    """Whether some report of ``epoch`` is stored (with its checkpoint, or left by a
    build whose report workers stored theirs and that died before the checkpoint)."""
    found: bool = await conn.fetchval(
        "SELECT EXISTS (SELECT 1 FROM reports WHERE epoch = $1)", epoch)
    return found


async def insert_reports(conn: db.Connection, epoch: int, agents: Sequence[str],
                         envelopes: Sequence[bytes]) -> None:
    """Write some of one epoch's reports, in the caller's transaction: a report worker's
    (:func:`bureau.storage.epochs.store_reports`). A report already there (a build that
    died before its checkpoint, or another writer) is the same bytes: it is left as it
    is."""
    await conn.execute(
        "INSERT INTO reports (agent, epoch, envelope) SELECT a, $2, e"
        " FROM unnest($1::text[], $3::bytea[]) AS t(a, e) ON CONFLICT DO NOTHING",
        agents, epoch, envelopes)


# --------------------------------------------------------------------------- reading


async def latest_epoch(conn: db.Connection) -> int | None:
    """The latest epoch whose reports are complete (it has a checkpoint)."""
    value: int | None = await conn.fetchval("SELECT max(epoch) FROM checkpoints")
    return value


async def report_envelope(conn: db.Connection, agent: str,
                          epoch: int | None) -> bytes | None:
    """The agent's report of ``epoch``; with None, its latest report of an epoch whose
    reports are complete — never nothing for an agent that has one (issue 35: a reader
    was told "no report" for 20 s after a seal)."""
    if epoch is None:
        row = await conn.fetchrow(
            "SELECT r.envelope FROM reports r JOIN checkpoints c USING (epoch)"
            " WHERE r.agent = $1 ORDER BY r.epoch DESC LIMIT 1", agent)
    else:
        row = await conn.fetchrow(
            "SELECT r.envelope FROM reports r JOIN checkpoints c USING (epoch)"
            " WHERE r.agent = $1 AND r.epoch = $2", agent, epoch)
    return None if row is None else bytes(row["envelope"])


async def building(conn: db.Connection) -> int | None:
    """The oldest sealed epoch whose reports are not complete yet (no checkpoint)."""
    value: int | None = await conn.fetchval(
        "SELECT min(s.epoch) FROM seals s WHERE NOT EXISTS"
        " (SELECT 1 FROM checkpoints c WHERE c.epoch = s.epoch)")
    return value


async def checkpoint_envelope(conn: db.Connection, epoch: int | None) -> bytes | None:
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


async def seal_status(conn: db.Connection) -> SealStatus:
    row = await conn.fetchrow(
        "SELECT (SELECT max(epoch) FROM checkpoints) AS published,"
        " (SELECT epoch FROM entries WHERE seq = 1) AS first,"
        " (SELECT e.recorded_at FROM seals s JOIN entries e ON e.seq = s.seq"
        "  ORDER BY s.epoch DESC LIMIT 1) AS sealed_at")
    return SealStatus(row["published"], row["first"], row["sealed_at"])


# --------------------------------------------------------------------------- sealing


async def last_sealed_seq(conn: db.Connection) -> int:
    """The last entry the latest seal covers (0 before the first seal)."""
    row = await conn.fetchrow("SELECT last_seq FROM seals ORDER BY epoch DESC LIMIT 1")
    return 0 if row is None else int(row["last_seq"])


async def busy_epochs(conn: db.Connection, after: int, before: int,
                      seal_kind: str) -> list[tuple[int, int]]:
    """(epoch, its last seq) of every epoch before ``before`` with an entry after seq
    ``after`` other than a ``seal_kind`` entry, oldest first."""
    rows = await conn.fetch(
        "SELECT epoch, max(seq) AS last, bool_or(kind <> $3) AS busy FROM entries"
        " WHERE seq > $1 AND epoch < $2 GROUP BY epoch ORDER BY epoch", after, before,
        seal_kind)
    return [(r["epoch"], r["last"]) for r in rows if r["busy"]]


async def insert_seal(conn: db.Connection, epoch: int, seq: int, last_seq: int,
                      head: str) -> None:
    await conn.execute("INSERT INTO seals (epoch, seq, last_seq, head)"
                       " VALUES ($1, $2, $3, $4)", epoch, seq, last_seq, head)


async def seal_due(conn: db.Connection, current_epoch: int, seal_kind: str) -> bool:
    """Is there an entry (other than a ``seal_kind`` one) of an epoch before
    ``current_epoch`` after the latest seal?"""
    due: bool = await conn.fetchval(
        "SELECT EXISTS (SELECT 1 FROM entries WHERE kind <> $2 AND epoch < $1 AND seq >"
        " COALESCE((SELECT last_seq FROM seals ORDER BY epoch DESC LIMIT 1), 0))",
        current_epoch, seal_kind)
    return due


async def published_seal(conn: db.Connection, epoch: int | None) -> Seal | None:
    """The seal of ``epoch`` (default: the latest) if its reports are published."""
    row = await conn.fetchrow(
        "SELECT s.epoch, s.seq, s.last_seq, s.head FROM seals s JOIN checkpoints c"
        " USING (epoch) WHERE ($1::bigint IS NULL OR s.epoch = $1)"
        " ORDER BY s.epoch DESC LIMIT 1", epoch)
    return None if row is None else Seal(row["epoch"], row["seq"], row["last_seq"],
                                         row["head"])


async def reported_seal(conn: db.Connection, agent: str, epoch: int | None) -> Seal | None:
    """The seal of ``epoch`` (default: the latest) if it is published with a report
    of ``agent``."""
    row = await conn.fetchrow(
        "SELECT s.epoch, s.seq, s.last_seq, s.head FROM seals s JOIN checkpoints c"
        " USING (epoch) JOIN reports r ON r.epoch = s.epoch AND r.agent = $1"
        " WHERE ($2::bigint IS NULL OR s.epoch = $2) ORDER BY s.epoch DESC LIMIT 1",
        agent, epoch)
    return None if row is None else Seal(row["epoch"], row["seq"], row["last_seq"],
                                         row["head"])


# The reports of one epoch, each with what a ranking shows, decoded from the stored
# envelope by PostgreSQL, ranked by the low end of the score.
_RANKED_SQL = """
WITH decoded AS (
    SELECT r.agent, convert_from(decode(
        convert_from(r.envelope, 'UTF8')::jsonb ->> 'payload', 'base64'), 'UTF8')::jsonb AS p
    FROM reports r WHERE r.epoch = $1)
SELECT agent, p ->> 'name' AS name, (p -> 'score' ->> 'value')::float8 AS value,
       (p -> 'score' ->> 'low')::float8 AS low, (p -> 'score' ->> 'high')::float8 AS high,
       (p -> 'score' ->> 'interactions')::bigint AS interactions,
       (p -> 'reliability' ->> 'observed')::bigint AS observed
FROM decoded
ORDER BY low DESC NULLS LAST, agent
"""


async def ranked(conn: db.Connection, epoch: int) -> list[db.Row]:
    """Rows (agent, name, value, low, high, interactions, observed) of ``epoch``'s
    reports, highest low end first."""
    rows: list[db.Row] = await conn.fetch(_RANKED_SQL, epoch)
    return rows


async def has_checkpoint(conn: db.Connection, epoch: int) -> bool:
    """Are ``epoch``'s reports complete?"""
    found = await conn.fetchval("SELECT epoch FROM checkpoints WHERE epoch = $1", epoch)
    return found is not None
