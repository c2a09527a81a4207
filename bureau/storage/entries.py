"""The ``entries`` table as the views read it: seq ranges of stored entries, a chunk at
a time (derivation, explanations, evaluator records), the entries exclusions name, ids
by seq, and the position the next entry takes.

The kind names come from the caller (the kinds table is a layer above): they are
written into the SQL as literals once, when a reader is made.
"""

from __future__ import annotations

from collections.abc import Sequence

from bureau.storage import db


def shard_of(agent: str) -> str:
    """The report shard, of ``$4``, of the agent key the SQL expression ``agent`` gives
    (see bureau.views.shards): every reader of a shard's entries uses this."""
    return f"(hashtext({agent}) & 2147483647) % $4"


#: An entry's shard of ``$4``: by its ``subject`` column, which for every entry a report
#: reads is the agent it is about — for an exclusion, its target's subject; for an
#: enrollment or amendment, the agent itself.
SHARD_OF_ENTRY = shard_of("coalesce(subject, '')")

# The entries of a seq range that derivation reads, in seq order, as stored. For an
# exclusion PostgreSQL also looks up the seq of the entry it names (exclusions are rare;
# the builder names entries by seq). The payloads are decoded by the caller, in Python:
# parsing ~300 bytes of JSON costs PostgreSQL's jsonb about four times what orjson
# costs, and at a seal every core is busy anyway.
_RAW_SQL = r"""
SELECT seq, id, kind, signer, entry, epoch,
  CASE WHEN kind = '{exclusion}' THEN (SELECT t.seq FROM entries t WHERE t.id =
    convert_from(e.entry, 'UTF8')::jsonb->'body'->>'entry') END AS target_seq
FROM entries e WHERE seq > $1 AND seq <= $2
  AND kind IN ({kinds}) {shard}
ORDER BY seq
"""

_BY_SEQS_SQL = ("SELECT seq, kind, signer, entry, epoch FROM entries"
                " WHERE seq = ANY($1::bigint[])")


class EvidenceEntries:
    """Reads the entries of the ``kinds`` named (the evidence kinds), by seq range;
    ``exclusion`` is the kind whose target's seq is looked up, ``reporter`` the kind
    every shard reads (reporter updates are about no agent)."""

    __slots__ = ("_all", "_shard")

    def __init__(self, kinds: Sequence[str], exclusion: str, reporter: str) -> None:
        names = ", ".join(f"'{k}'" for k in kinds)
        self._all = _RAW_SQL.format(kinds=names, exclusion=exclusion, shard="")
        self._shard = _RAW_SQL.format(
            kinds=names, exclusion=exclusion,
            shard=f"AND (kind = '{reporter}' OR {SHARD_OF_ENTRY} = $3)")

    async def in_range(self, conn: db.Connection, low: int, high: int,
                       shard: tuple[int, int] | None = None) -> list[db.Row]:
        """Rows (seq, id, kind, signer, entry, epoch, target_seq) with
        ``low < seq <= high``, in seq order; with ``shard=(i, n)`` only shard ``i``'s."""
        rows: list[db.Row] = await (conn.fetch(self._all, low, high) if shard is None
                                    else conn.fetch(self._shard, low, high, *shard))
        return rows


async def by_seqs(conn: db.Connection, seqs: Sequence[int]) -> list[db.Row]:
    """Rows (seq, kind, signer, entry, epoch) of the entries at ``seqs``."""
    rows: list[db.Row] = await conn.fetch(_BY_SEQS_SQL, seqs)
    return rows


async def ids_at(conn: db.Connection, seqs: Sequence[int]) -> dict[int, str]:
    """seq -> entry id, for the entries at ``seqs``."""
    return {r["seq"]: r["id"] for r in await conn.fetch(
        "SELECT seq, id FROM entries WHERE seq = ANY($1::bigint[])", seqs)}


async def next_seq(conn: db.Connection) -> int:
    """The position the next entry (a seal, say) would take."""
    seq: int = await conn.fetchval("SELECT seq + 1 FROM ledger_head")
    return seq


async def ids_after(conn: db.Connection, after: int, limit: int) -> list[db.Row]:
    """Rows (seq, id) of the next ``limit`` entries after ``after``, in seq order."""
    rows: list[db.Row] = await conn.fetch(
        "SELECT seq, id FROM entries WHERE seq > $1 ORDER BY seq LIMIT $2", after, limit)
    return rows


async def stored_after(conn: db.Connection, after: int, limit: int) -> list[db.Row]:
    """Rows (seq, id, kind, entry) of the next ``limit`` entries after ``after``."""
    rows: list[db.Row] = await conn.fetch(
        "SELECT seq, id, kind, entry FROM entries WHERE seq > $1 ORDER BY seq LIMIT $2",
        after, limit)
    return rows
