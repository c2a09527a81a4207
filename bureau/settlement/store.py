"""The settlement's inputs, read from the ledger up to a seal, and where the signed
document and its rows are kept (``settlements``, ``settlement_rows``: views, written by
the report builder before the epoch's checkpoint, rebuilt by ``bureau rebuild``).

Reading an epoch's inputs costs what can earn, not what the ledger holds: the epoch's
attestations that a later probe covers, found by joining the admission indexes
(``verdicts``, ``probes``, ``facts``), and only those entries decoded; and the ledger's
exclusions and reporter updates (few; the reporter entries through a partial index,
migration 0013).
"""

from __future__ import annotations

import asyncpg

from bureau.kinds import ATTESTATION, REPORTER
from bureau.scoring.inputs import Attestation, Evidence, Exclusion, Fact, Probe, ReporterUpdate
from bureau.settlement.document import Allocation
from bureau.views.evidence import decode_entry
from bureau.views.store import Seal

#: Kinds as literals (not parameters) so that a generic plan can use the partial index.
_REPORTERS_SQL = (f"SELECT seq, id, kind, signer, entry, epoch FROM entries"
                  f" WHERE kind = '{REPORTER.name}' AND seq <= $1 ORDER BY seq")
#: The epoch's attestations that have a probe recorded after them (up to the seal), and
#: those probes: every other attestation has no blind truth and earns nothing, so it is
#: never read. (A probe of an interaction is unique per reporter, admission's index says;
#: a probe after the verdict is after the epoch's start.) The facts of the interactions
#: come too: distrust reads them ("witnessed only by distrusted facts").
_CANDIDATES_SQL = f"""
WITH c AS (
  SELECT v.seq AS verdict, p.seq AS probe, f.seq AS fact
  FROM verdicts v
  JOIN probes p ON p.reporter = v.reporter AND p.interaction = v.ref
  LEFT JOIN facts f ON f.reporter = v.reporter AND f.interaction = v.ref AND f.seq <= $2
  WHERE v.kind = '{ATTESTATION.name}' AND v.seq > $1 AND v.seq <= $2
    AND p.seq > v.seq AND p.seq <= $2
)
SELECT e.seq, e.id, e.kind, e.signer, e.entry, e.epoch FROM entries e
WHERE e.seq IN (SELECT verdict FROM c UNION SELECT probe FROM c UNION SELECT fact FROM c)
ORDER BY e.seq
"""


async def pool_of_epoch(conn: asyncpg.Connection, epoch: int, upto: int) -> int:
    """The pool of ``epoch``: the highest-seq ``pool`` entry up to the seal whose
    ``from_epoch`` is at most ``epoch``; 0 when there is none (SPEC §3)."""
    units: int | None = await conn.fetchval(
        "SELECT units FROM pools WHERE from_epoch <= $1 AND seq <= $2"
        " ORDER BY seq DESC LIMIT 1", epoch, upto)
    return units or 0


async def previous_last_seq(conn: asyncpg.Connection, seal: Seal) -> int:
    """The last entry of the epoch sealed before ``seal``'s (0 for the first): the
    entries recorded in ``seal.epoch`` are those after it, up to ``seal.last_seq``."""
    lo: int | None = await conn.fetchval(
        "SELECT last_seq FROM seals WHERE epoch < $1 ORDER BY epoch DESC LIMIT 1",
        seal.epoch)
    return lo or 0


async def epoch_inputs(conn: asyncpg.Connection, lo: int, hi: int) -> Evidence:
    """What :func:`bureau.settlement.earn.matched_blind` needs for the attestations with
    ``lo < seq <= hi``, as the entries up to ``hi`` say it: those that may earn, with
    their probes and facts, and every exclusion and reporter update."""
    facts: list[Fact] = []
    probes: list[Probe] = []
    atts: list[Attestation] = []
    for r in await conn.fetch(_CANDIDATES_SQL, lo, hi):
        x = _decode(r)
        if isinstance(x, Attestation):
            atts.append(x)
        elif isinstance(x, Probe):
            probes.append(x)
        elif isinstance(x, Fact):
            facts.append(x)
    exclusions = [Exclusion(r["target"], r["reason"]) for r in await conn.fetch(
        "SELECT target, reason FROM exclusions WHERE seq <= $1 ORDER BY seq", hi)]
    updates = [x for r in await conn.fetch(_REPORTERS_SQL, hi)
               if isinstance(x := _decode(r), ReporterUpdate)]
    return Evidence(tuple(facts), tuple(probes), tuple(atts), (), tuple(exclusions),
                    tuple(updates))


def _decode(r: asyncpg.Record) -> object:
    return decode_entry(r["seq"], r["id"], r["kind"], r["signer"], bytes(r["entry"]),
                        r["epoch"])


# --------------------------------------------------------------------------- writing


async def store_settlement(conn: asyncpg.Connection, allocation: Allocation,
                           envelope: bytes) -> None:
    """Write an epoch's signed settlement and its rows (in the caller's transaction, the
    one that stores the epoch's checkpoint). Another writer's are the same bytes."""
    done = await conn.fetchval(
        "INSERT INTO settlements (epoch, envelope) VALUES ($1, $2) ON CONFLICT DO NOTHING"
        " RETURNING epoch", allocation.epoch, envelope)
    if done is None:
        return
    await conn.executemany(
        "INSERT INTO settlement_rows (epoch, leaf, evaluator, row) VALUES ($1, $2, $3, $4)",
        [(allocation.epoch, i, k, r) for i, (k, r) in
         enumerate(zip(allocation.evaluators, allocation.rows, strict=True))])


# --------------------------------------------------------------------------- reading


async def settlement_envelope(conn: asyncpg.Connection, epoch: int) -> bytes | None:
    """The signed settlement of a published epoch (one with a checkpoint), if any."""
    row = await conn.fetchrow(
        "SELECT s.envelope FROM settlements s JOIN checkpoints c USING (epoch)"
        " WHERE s.epoch = $1", epoch)
    return None if row is None else bytes(row["envelope"])


async def settlement_rows(conn: asyncpg.Connection, epoch: int) -> list[bytes]:
    """Every row of an epoch's settlement, in leaf order."""
    return [bytes(r["row"]) for r in await conn.fetch(
        "SELECT row FROM settlement_rows WHERE epoch = $1 ORDER BY leaf", epoch)]


async def published_settlements(conn: asyncpg.Connection, limit: int) -> list[bytes]:
    """The latest ``limit`` published settlement envelopes, newest epoch first."""
    return [bytes(r["envelope"]) for r in await conn.fetch(
        "SELECT s.envelope FROM settlements s JOIN checkpoints c USING (epoch)"
        " ORDER BY s.epoch DESC LIMIT $1", limit)]


