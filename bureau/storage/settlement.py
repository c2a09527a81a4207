"""The settlement's tables and inputs (SPEC §3, bureau.settlement): the ledger read up to
a seal, and where the signed document and its rows are kept (``settlements``,
``settlement_rows``: views, written by the report builder before the epoch's checkpoint,
rebuilt by ``bureau rebuild``).

Reading an epoch's inputs costs what can earn, not what the ledger holds: the epoch's
attestations that a later probe covers, found by joining the admission indexes
(``verdicts``, ``probes``, ``facts``), and only those entries (decoded above); and the
ledger's exclusions and reporter updates (few; the reporter entries through a partial
index, migration 0013).
"""

from __future__ import annotations

from collections.abc import Sequence

from bureau.storage import db

#: The epoch's attestations that have a probe recorded after them (up to the seal), and
#: those probes: every other attestation has no blind truth and earns nothing, so it is
#: never read. (A probe of an interaction is unique per reporter, admission's index says;
#: a probe after the verdict is after the epoch's start.) The facts of the interactions
#: come too: distrust reads them ("witnessed only by distrusted facts").
_CANDIDATES_SQL = """
WITH c AS (
  SELECT v.seq AS verdict, p.seq AS probe, f.seq AS fact
  FROM verdicts v
  JOIN probes p ON p.reporter = v.reporter AND p.interaction = v.ref
  LEFT JOIN facts f ON f.reporter = v.reporter AND f.interaction = v.ref AND f.seq <= $2
  WHERE v.kind = '{attestation}' AND v.seq > $1 AND v.seq <= $2
    AND p.seq > v.seq AND p.seq <= $2
)
SELECT e.seq, e.id, e.kind, e.signer, e.entry, e.epoch FROM entries e
WHERE e.seq IN (SELECT verdict FROM c UNION SELECT probe FROM c UNION SELECT fact FROM c)
ORDER BY e.seq
"""


class SettlementInputs:
    """The entries a settlement reads; ``attestation`` and ``reporter`` are those kinds'
    names, written as literals (not parameters) so that a generic plan can use the
    partial indexes."""

    __slots__ = ("_candidates", "_reporters")

    def __init__(self, attestation: str, reporter: str) -> None:
        self._candidates = _CANDIDATES_SQL.format(attestation=attestation)
        self._reporters = (f"SELECT seq, id, kind, signer, entry, epoch FROM entries"
                           f" WHERE kind = '{reporter}' AND seq <= $1 ORDER BY seq")

    async def candidates(self, conn: db.Connection, lo: int, hi: int) -> list[db.Row]:
        """Rows (seq, id, kind, signer, entry, epoch) of the attestations with
        ``lo < seq <= hi`` a later probe covers, those probes and their facts."""
        rows: list[db.Row] = await conn.fetch(self._candidates, lo, hi)
        return rows

    async def reporter_entries(self, conn: db.Connection, hi: int) -> list[db.Row]:
        """Rows of every reporter entry up to ``hi``."""
        rows: list[db.Row] = await conn.fetch(self._reporters, hi)
        return rows


async def exclusions(conn: db.Connection, hi: int) -> list[tuple[str, str]]:
    """(target, reason) of every exclusion up to ``hi``, in seq order."""
    return [(r["target"], r["reason"]) for r in await conn.fetch(
        "SELECT target, reason FROM exclusions WHERE seq <= $1 ORDER BY seq", hi)]


async def pool_of_epoch(conn: db.Connection, epoch: int, upto: int) -> int:
    """The pool of ``epoch``: the highest-seq ``pool`` entry up to the seal whose
    ``from_epoch`` is at most ``epoch``; 0 when there is none (SPEC §3)."""
    units: int | None = await conn.fetchval(
        "SELECT units FROM pools WHERE from_epoch <= $1 AND seq <= $2"
        " ORDER BY seq DESC LIMIT 1", epoch, upto)
    return units or 0


async def previous_last_seq(conn: db.Connection, epoch: int) -> int:
    """The last entry of the epoch sealed before ``epoch`` (0 for the first): the
    entries recorded in ``epoch`` are those after it, up to its seal's ``last_seq``."""
    lo: int | None = await conn.fetchval(
        "SELECT last_seq FROM seals WHERE epoch < $1 ORDER BY epoch DESC LIMIT 1", epoch)
    return lo or 0


# --------------------------------------------------------------------------- writing


async def store_settlement(conn: db.Connection, epoch: int, envelope: bytes,
                           evaluators: Sequence[str], rows: Sequence[bytes]) -> None:
    """Write an epoch's signed settlement and its rows (in the caller's transaction, the
    one that stores the epoch's checkpoint). Another writer's are the same bytes."""
    done = await conn.fetchval(
        "INSERT INTO settlements (epoch, envelope) VALUES ($1, $2) ON CONFLICT DO NOTHING"
        " RETURNING epoch", epoch, envelope)
    if done is None:
        return
    await conn.executemany(
        "INSERT INTO settlement_rows (epoch, leaf, evaluator, row) VALUES ($1, $2, $3, $4)",
        [(epoch, i, k, r) for i, (k, r) in enumerate(zip(evaluators, rows, strict=True))])


# --------------------------------------------------------------------------- reading


async def settlement_envelope(conn: db.Connection, epoch: int) -> bytes | None:
    """The signed settlement of a published epoch (one with a checkpoint), if any."""
    row = await conn.fetchrow(
        "SELECT s.envelope FROM settlements s JOIN checkpoints c USING (epoch)"
        " WHERE s.epoch = $1", epoch)
    return None if row is None else bytes(row["envelope"])


async def settlement_rows(conn: db.Connection, epoch: int) -> list[bytes]:
    """Every row of an epoch's settlement, in leaf order."""
    return [bytes(r["row"]) for r in await conn.fetch(
        "SELECT row FROM settlement_rows WHERE epoch = $1 ORDER BY leaf", epoch)]


async def published_settlements(conn: db.Connection, limit: int) -> list[bytes]:
    """The latest ``limit`` published settlement envelopes, newest epoch first."""
    return [bytes(r["envelope"]) for r in await conn.fetch(
        "SELECT s.envelope FROM settlements s JOIN checkpoints c USING (epoch)"
        " ORDER BY s.epoch DESC LIMIT $1", limit)]


async def stored_settlements(conn: db.Connection) -> list[db.Row]:
    """Rows (epoch, envelope, last_seq) of every stored settlement, by epoch, with its
    seal's last seq."""
    rows: list[db.Row] = await conn.fetch(
        "SELECT t.epoch, t.envelope, s.last_seq FROM settlements t JOIN seals s"
        " USING (epoch) ORDER BY t.epoch")
    return rows
