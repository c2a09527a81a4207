"""An agent's own file (SPEC §9), defined once: which entries are in it.

The kinds table says through which links an entry of each kind is in an agent's file
(:attr:`bureau.kinds.Kind.files`, :class:`bureau.kinds.FileLink`): the entry's signer and
subject, a fact's caller, an exclusion's target's parties, a resolution's disputer. This
module turns each link into one SQL branch over the ledger and its index tables, and
the branches into the two questions asked of files:

* **one agent's file after a seq** — ``GET /v1/agents/{agent}/entries``
  (:attr:`QUERIES`, used by :mod:`bureau.reads.pages`), each branch limited on its
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

from bureau.evidence.entries import EntrySpan
from bureau.kinds import KINDS, FileLink
from bureau.storage import db, files
from reporters.tlog.merkle import RootAccumulator, entry_leaf_hash

# The caller, target and disputer links read one kind's index table each: only kinds
# indexed there may have them.
for _link, _table in files.LINK_TABLES.items():
    assert all(k.index == _table for k in KINDS if FileLink(_link) in k.files), _link
_USED = [link for link in FileLink if any(link in k.files for k in KINDS)]

#: the file statements, made from the kinds table
QUERIES = files.FileQueries(
    [link.value for link in _USED],
    {link.value: [k.name for k in KINDS if link in k.files]
     for link in (FileLink.SIGNER, FileLink.SUBJECT)})

#: (agent, seq, entry id): one entry in one agent's file
Membership = tuple[str, int, str]


async def read_files(conn: db.Connection, span: EntrySpan,
                     ) -> AsyncIterator[list[Membership]]:
    """Every entry of ``span`` in every agent's file (with a shard, the files of its
    agents), in seq order, a chunk of seqs at a time."""
    for low, high in span.chunks():
        yield await QUERIES.memberships(conn, low, high, span.shard)


async def load_files(conn: db.Connection, upto: int) -> dict[str, list[tuple[int, str]]]:
    """Every agent's file up to ``upto``, whole: (seq, entry id) in seq order (the
    reference path)."""
    files: dict[str, list[tuple[int, str]]] = {}
    async for rows in read_files(conn, EntrySpan(0, upto)):
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
