"""An agent's own file (SPEC §9), defined once: which entries are in it.

The kinds table says through which links an entry of each kind is in an agent's file
(:attr:`bureau.kinds.Kind.files`, :class:`bureau.kinds.FileLink`): the entry's signer and
subject, a fact's caller, an exclusion's target's parties, a resolution's disputer. This
module turns each link into one SQL branch over the ledger and its index tables, and
the branches into the two questions asked of files:

* **one agent's file after a seq** — ``GET /v1/agents/{agent}/entries``
  (:func:`agent_seqs_sql`, used by :mod:`bureau.views.reads`), each branch limited on its
  own index so a page costs ``O(limit)``;
* **every file an entry range adds to** — the report builder's evidence roots
  (:func:`read_files`, :class:`FileRoots`), a chunk of seqs at a time, or only the agents
  of one report shard.

So the file an agent reads and the file its report's ``evidence.root`` is computed over
cannot drift apart. ``tests/views/test_files.py`` holds the SQL equal to
:func:`bureau.kinds.in_files_of` over a real ledger.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass

import asyncpg

from bureau.kinds import KINDS, FileLink
from bureau.views.evidence import CHUNK, shard_of
from reporters.tlog.merkle import RootAccumulator, entry_leaf_hash


@dataclass(frozen=True)
class _Branch:
    """``SELECT {agent}, {seq} FROM {source} WHERE {where}``: the (agent, entry seq)
    pairs one link gives."""

    agent: str
    seq: str
    source: str
    where: str


def _kinds_with(link: FileLink) -> str:
    names = ", ".join(f"'{k.name}'" for k in KINDS if link in k.files)  # the table's names
    return f"({names})"


# An exclusion's target is in the file of its signer, its subject and, for a fact, its
# caller; the partial index facts_seq_caller answers the last.
_TARGET_PARTIES = ("(VALUES (t.signer), (t.subject), ((SELECT f.caller FROM facts f"
                   " WHERE f.seq = t.seq AND f.caller IS NOT NULL)))")

_BRANCHES: dict[FileLink, _Branch] = {
    FileLink.SIGNER: _Branch("e.signer", "e.seq", "entries e",
                             f"e.kind IN {_kinds_with(FileLink.SIGNER)}"),
    FileLink.SUBJECT: _Branch("e.subject", "e.seq", "entries e",
                              f"e.kind IN {_kinds_with(FileLink.SUBJECT)}"),
    FileLink.CALLER: _Branch("f.caller", "f.seq", "facts f", "f.caller IS NOT NULL"),
    FileLink.TARGET: _Branch(
        "p.agent", "x.seq", "exclusions x JOIN entries t ON t.id = x.target"
        f" CROSS JOIN LATERAL {_TARGET_PARTIES} AS p(agent)", "true"),
    FileLink.DISPUTER: _Branch(
        "d.signer", "r.seq", "resolutions r JOIN disputes d ON d.entry_id = r.dispute",
        "true"),
}
# The caller, target and disputer links read one kind's index table each: only kinds
# indexed there may have them.
for _link, _table in ((FileLink.CALLER, "facts"), (FileLink.TARGET, "exclusions"),
                      (FileLink.DISPUTER, "resolutions")):
    assert all(k.index == _table for k in KINDS if _link in k.files), _link
_USED = [link for link in FileLink if any(link in k.files for k in KINDS)]


def agent_seqs_sql() -> str:
    """The seqs of one agent's file: ``$1`` the agent, ``$2`` after this seq, ``$3`` at
    most this many from each link (their union, ordered and cut, is the page)."""
    return "\nUNION\n".join(
        f"(SELECT {b.seq} AS seq FROM {b.source} WHERE {b.where} AND {b.agent} = $1"
        f" AND {b.seq} > $2 ORDER BY {b.seq} LIMIT $3)"
        for b in (_BRANCHES[link] for link in _USED))


def _range_sql(shard: bool) -> str:
    """Every (agent, seq, entry id) with ``$1 < seq <= $2``, in seq order; with
    ``shard``, only the agents of shard ``$3`` of ``$4`` (the agent's report shard)."""
    pairs = "\nUNION\n".join(
        f"SELECT {b.agent} AS agent, {b.seq} AS seq FROM {b.source} WHERE {b.where}"
        f" AND {b.seq} > $1 AND {b.seq} <= $2 AND {b.agent} IS NOT NULL"
        for b in (_BRANCHES[link] for link in _USED))
    where = f" WHERE {shard_of('m.agent')} = $3" if shard else ""
    return (f"SELECT m.agent, m.seq, e.id FROM ({pairs}) m JOIN entries e ON e.seq = m.seq"
            f"{where} ORDER BY m.seq, m.agent")


_ALL_SQL = _range_sql(False)
_SHARD_SQL = _range_sql(True)

#: (agent, seq, entry id): one entry in one agent's file
Membership = tuple[str, int, str]


async def read_files(conn: asyncpg.Connection, after: int, upto: int, *,
                     shard: tuple[int, int] | None = None, chunk: int = CHUNK,
                     ) -> AsyncIterator[list[Membership]]:
    """Every entry with ``after < seq <= upto`` in every agent's file (or only the
    agents of shard ``(i, n)``), in seq order, a chunk of seqs at a time."""
    for low in range(after, upto, chunk):
        high = min(upto, low + chunk)
        rows = await (conn.fetch(_ALL_SQL, low, high) if shard is None
                      else conn.fetch(_SHARD_SQL, low, high, *shard))
        yield [(r["agent"], r["seq"], r["id"]) for r in rows]


async def load_files(conn: asyncpg.Connection, upto: int) -> dict[str, list[tuple[int, str]]]:
    """Every agent's file up to ``upto``, whole: (seq, entry id) in seq order (the
    reference path)."""
    files: dict[str, list[tuple[int, str]]] = {}
    async for rows in read_files(conn, 0, upto):
        for agent, seq, entry_id in rows:
            files.setdefault(agent, []).append((seq, entry_id))
    return files


class FileRoots:
    """Every file's Merkle root, kept up to date as the files grow. A file only grows at
    its end (its entries come in seq order), so each is an accumulator of ``O(log n)``
    hashes, fed the entries new since the last seal; an entry in several files (an
    attestation is in its evaluator's and its subject's) is a leaf of each."""

    def __init__(self) -> None:
        self._files: dict[str, RootAccumulator] = {}
        self._changed: set[str] = set()

    def add(self, rows: Iterable[Membership]) -> None:
        """Entries in seq order (within each file)."""
        files, changed = self._files, self._changed
        leaf, leaf_of = "", b""
        for agent, _, entry_id in rows:
            if entry_id != leaf:  # rows come by seq: one hash for every file it is in
                leaf, leaf_of = entry_id, entry_leaf_hash(entry_id)
            acc = files.get(agent)
            if acc is None:
                acc = files[agent] = RootAccumulator()
            acc.push(leaf_of)
            changed.add(agent)

    def root(self, agent: str) -> bytes:
        acc = self._files.get(agent)
        return acc.root() if acc is not None else RootAccumulator().root()

    def take_changed(self) -> set[str]:
        """The files that grew since the last call."""
        changed, self._changed = self._changed, set()
        return changed
