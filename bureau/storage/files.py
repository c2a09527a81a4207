"""A party's own file (SPEC §9) as SQL: which entries are in it, its pages of entries
and refusals, and the entry ranges the report builder's evidence roots read.

Which kinds an entry comes into a file by is the kinds table's business (a layer
above): :class:`FileQueries` is made from it once (``bureau.reads.files``), one SQL
branch per link, and holds the statements built from them.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from bureau.storage import db
from bureau.storage.entries import shard_of


@dataclass(frozen=True)
class _Branch:
    """``SELECT {agent}, {seq} FROM {source} WHERE {where}``: the (agent, entry seq)
    pairs one link gives."""

    agent: str
    seq: str
    source: str
    where: str


# An exclusion's target is in the file of its signer, its subject and, for a fact, its
# caller; the partial index facts_seq_caller answers the last.
_TARGET_PARTIES = ("(VALUES (t.signer), (t.subject), ((SELECT f.caller FROM facts f"
                   " WHERE f.seq = t.seq AND f.caller IS NOT NULL)))")

#: the index table a link's branch reads, for the links that read one
LINK_TABLES = {"caller": "facts", "target": "exclusions", "disputer": "resolutions"}


def _branches(signer_kinds: Sequence[str], subject_kinds: Sequence[str]
              ) -> dict[str, _Branch]:
    def names(kinds: Sequence[str]) -> str:
        return "(" + ", ".join(f"'{k}'" for k in kinds) + ")"

    return {
        "signer": _Branch("e.signer", "e.seq", "entries e", f"e.kind IN {names(signer_kinds)}"),
        "subject": _Branch("e.subject", "e.seq", "entries e",
                           f"e.kind IN {names(subject_kinds)}"),
        "caller": _Branch("f.caller", "f.seq", "facts f", "f.caller IS NOT NULL"),
        "target": _Branch(
            "p.agent", "x.seq", "exclusions x JOIN entries t ON t.id = x.target"
            f" CROSS JOIN LATERAL {_TARGET_PARTIES} AS p(agent)", "true"),
        "disputer": _Branch(
            "d.signer", "r.seq", "resolutions r JOIN disputes d ON d.entry_id = r.dispute",
            "true"),
    }


_REPORTER_SEQS = """
    SELECT seq FROM entries WHERE signer = $1 AND seq > $2 ORDER BY seq LIMIT $3
"""

# $4 = byte budget. `before` is the size of the page's entries ahead of this one.
_PAGE_SQL = """
    WITH cand AS ({seqs}),
    picked AS (
        SELECT e.seq, e.id, e.entry, octet_length(e.entry) AS size
        FROM entries e JOIN (SELECT seq FROM cand ORDER BY seq LIMIT $3) c USING (seq)),
    sized AS (
        SELECT seq, id, entry, count(*) OVER () AS candidates,
               sum(size) OVER (ORDER BY seq) - size AS before
        FROM picked)
    SELECT seq, id, entry, candidates FROM sized WHERE before < $4 ORDER BY seq
"""

_REFUSALS_SQL = """
    WITH picked AS (
        SELECT ref, content_key, kind, code, path, detail, refused_at, envelope,
               coalesce(octet_length(envelope), 0) AS size
        FROM refusals WHERE signer = $1 AND ref > $2 ORDER BY ref LIMIT $3),
    sized AS (
        SELECT *, count(*) OVER () AS candidates,
               sum(size) OVER (ORDER BY ref) - size AS before
        FROM picked)
    SELECT ref, content_key, kind, code, path, detail, refused_at, envelope, candidates
    FROM sized WHERE before < $4 ORDER BY ref
"""


class FileQueries:
    """The file statements, for the links ``used`` (in order) with the kinds given
    for the signer and subject links."""

    __slots__ = ("_agent_page", "_all", "_reporter_page", "_shard", "agent_seqs")

    def __init__(self, used: Sequence[str], kinds: Mapping[str, Sequence[str]]) -> None:
        branches = _branches(kinds.get("signer", ()), kinds.get("subject", ()))
        chosen = [branches[link] for link in used]
        #: the seqs of one agent's file: ``$1`` the agent, ``$2`` after this seq,
        #: ``$3`` at most this many from each link (their union, ordered and cut, is the
        #: page); each branch limited on its own index, so a page costs ``O(limit)``
        self.agent_seqs = "\nUNION\n".join(
            f"(SELECT {b.seq} AS seq FROM {b.source} WHERE {b.where} AND {b.agent} = $1"
            f" AND {b.seq} > $2 ORDER BY {b.seq} LIMIT $3)" for b in chosen)
        self._agent_page = _PAGE_SQL.format(seqs=self.agent_seqs)
        self._reporter_page = _PAGE_SQL.format(seqs=_REPORTER_SEQS)
        pairs = "\nUNION\n".join(
            f"SELECT {b.agent} AS agent, {b.seq} AS seq FROM {b.source} WHERE {b.where}"
            f" AND {b.seq} > $1 AND {b.seq} <= $2 AND {b.agent} IS NOT NULL"
            for b in chosen)

        def ranged(where: str) -> str:
            return (f"SELECT m.agent, m.seq, e.id FROM ({pairs}) m"
                    f" JOIN entries e ON e.seq = m.seq{where} ORDER BY m.seq, m.agent")

        self._all = ranged("")
        self._shard = ranged(f" WHERE {shard_of('m.agent')} = $3")

    async def memberships(self, conn: db.Connection, low: int, high: int,
                          shard: tuple[int, int] | None) -> list[tuple[str, int, str]]:
        """(agent, seq, entry id) of every entry with ``low < seq <= high`` in every
        agent's file (or only the agents of shard ``(i, n)``), in seq order."""
        rows = await (conn.fetch(self._all, low, high) if shard is None
                      else conn.fetch(self._shard, low, high, *shard))
        return [(r["agent"], r["seq"], r["id"]) for r in rows]

    async def agent_entries(self, conn: db.Connection, agent: str, after: int, limit: int,
                            budget: int) -> list[db.Row]:
        """Rows (seq, id, entry, candidates) of ``agent``'s file after ``after``: at
        most ``limit``, stopping once ``budget`` bytes are ahead."""
        rows: list[db.Row] = await conn.fetch(self._agent_page, agent, after, limit, budget)
        return rows

    async def reporter_entries(self, conn: db.Connection, reporter: str, after: int,
                               limit: int, budget: int) -> list[db.Row]:
        """The same page of the entries ``reporter`` signed."""
        rows: list[db.Row] = await conn.fetch(self._reporter_page, reporter, after, limit,
                                              budget)
        return rows


async def refusals_page(conn: db.Connection, signer: str, after: int, limit: int,
                        budget: int) -> list[db.Row]:
    """Rows (ref, content_key, kind, code, path, detail, refused_at, envelope,
    candidates) of ``signer``'s refusals after ``after``, paged like entries."""
    rows: list[db.Row] = await conn.fetch(_REFUSALS_SQL, signer, after, limit, budget)
    return rows


async def refusals_before(conn: db.Connection, signer: str, code: str,
                          before: dt.datetime) -> int:
    """How many of ``signer``'s envelopes were refused with ``code`` before ``before``."""
    count: int = await conn.fetchval(
        "SELECT count(*) FROM refusals WHERE signer = $1 AND code = $2 AND refused_at < $3",
        signer, code, before)
    return count
