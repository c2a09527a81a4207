"""The ledger's Merkle tree in PostgreSQL: the ``tree_nodes`` table (SPEC §8.1).

The hashing, the frontier and the proof plans are :mod:`reporters.tlog`'s; this module
is where their nodes live:

* **Appending.** The group commit extends its :class:`~reporters.tlog.merkle.Frontier`
  with the leaf hashes of every entry it appends and writes the nodes they complete in
  its one statement (:func:`bureau.storage.tree.pack_nodes`, ``insert_packed_sql``;
  see :mod:`bureau.storage.chain`). The frontier is read back, when the head moved under the
  committer's feet (another process appended) or after a restart, in the same round
  trip as the head (:func:`bureau.storage.tree.frontier_rows_sql`,
  :mod:`bureau.storage.admission`).
* **Serving.** A root or a proof at any size up to the current one is a plan of
  ``O(log n)`` nodes fetched in one query (:func:`fetch_nodes`).
* **Checking.** :class:`TreeCheck` recomputes the nodes from the entry ids, a chunk at a
  time, for ``bureau verify`` and ``bureau rebuild``.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

from bureau.errors import InternalError
from bureau.storage import db
from bureau.storage import tree as tree_store
from reporters.tlog import proofs
from reporters.tlog.merkle import EMPTY_ROOT, Frontier, Node, entry_leaf_hash


@dataclass(frozen=True, slots=True)
class TreeTip:
    """A frontier and the ledger head it belongs to: valid as long as the head is."""

    head: str
    frontier: Frontier

    @property
    def size(self) -> int:
        return self.frontier.size


def frontier_from(size: int, nodes: dict[Node, bytes]) -> Frontier:
    try:
        return Frontier.load(size, nodes.__getitem__)
    except KeyError as missing:
        raise InternalError(f"tree node {missing} of the frontier at size {size} is "
                            "missing: run `bureau rebuild`") from None


def check_found(nodes: Collection[Node], found: dict[Node, bytes]) -> dict[Node, bytes]:
    """``found`` if it holds every node asked for; a node that should exist but does not
    is a broken tree (InternalError)."""
    if len(found) != len(nodes):
        missing = sorted(set(nodes) - found.keys())[0]
        raise InternalError(f"tree node {missing} is missing: run `bureau rebuild`")
    return found


async def fetch_nodes(conn: db.Connection, nodes: Collection[Node]) -> dict[Node, bytes]:
    """The stored hashes of ``nodes``, in one query."""
    if not nodes:
        return {}
    rows = await tree_store.node_rows(conn, nodes)
    return check_found(nodes, {(r["level"], r["idx"]): bytes(r["hash"]) for r in rows})


async def load_tip(conn: db.Connection) -> TreeTip:
    """The frontier at the ledger head, for tools that append outside the committer
    (the caller holds the head lock)."""
    size, head = await tree_store.head_position(conn)
    return TreeTip(head, frontier_from(
        size, await fetch_nodes(conn, Frontier.nodes_at(size))))


async def root_at(conn: db.Connection, size: int) -> bytes:
    """The tree head at ``size`` (at most ``log2 size`` nodes, one query)."""
    plan = proofs.root_plan(size)
    return proofs.root_from_plan(plan, await fetch_nodes(conn, plan.nodes))


async def inclusion_proof(conn: db.Connection, index: int, size: int) -> list[bytes]:
    plan = proofs.inclusion_plan(index, size)
    return plan.hashes(await fetch_nodes(conn, plan.nodes))


async def consistency_proof(conn: db.Connection, old: int, new: int) -> list[bytes]:
    plan = proofs.consistency_plan(old, new)
    return plan.hashes(await fetch_nodes(conn, plan.nodes))


# --------------------------------------------------------------------------- checking


@dataclass
class TreeCheck:
    """The tree recomputed from entry ids fed in seq order (:meth:`feed`), compared
    with the stored nodes a chunk at a time: ``bureau verify`` and ``bureau rebuild``.
    Keeps the first difference; ``roots`` remembers the recomputed root at each size
    asked for in ``sizes`` (the sizes of the signed tree heads)."""

    sizes: frozenset[int] = frozenset()
    frontier: Frontier = field(default_factory=Frontier.empty)
    nodes: int = 0
    difference: str | None = None
    roots: dict[int, bytes] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if 0 in self.sizes:
            self.roots[0] = EMPTY_ROOT

    def extend(self, ids: list[str]) -> list[tuple[int, int, bytes]]:
        """Append entry ids; return the nodes they complete."""
        completed: list[tuple[int, int, bytes]] = []
        start = self.frontier.size
        # one leaf at a time only around the sizes whose roots are wanted
        cuts = sorted(s for s in self.sizes if start < s <= start + len(ids))
        done = 0
        for cut in [*(c - start for c in cuts), len(ids)]:
            self.frontier, more = self.frontier.extend(
                entry_leaf_hash(i) for i in ids[done:cut])
            completed += more
            done = cut
            if self.frontier.size in self.sizes:
                self.roots[self.frontier.size] = self.frontier.root()
        self.nodes += len(completed)
        return completed

    async def compare(self, conn: db.Connection, ids: list[str]) -> None:
        """Extend with ``ids`` and compare the nodes they complete with the stored ones."""
        completed = self.extend(ids)
        if self.difference is not None or not completed:
            return
        spans: dict[int, tuple[int, int]] = {}
        for level, idx, _ in completed:  # the nodes of a level complete in index order
            low, _ = spans.get(level, (idx, idx))
            spans[level] = (low, idx)
        levels = sorted(spans)
        stored = await tree_store.span_rows(
            conn, levels, [spans[lv][0] for lv in levels], [spans[lv][1] for lv in levels])
        have = {(r["level"], r["idx"]): bytes(r["hash"]) for r in stored}
        for level, idx, h in completed:
            got = have.get((level, idx))
            if got != h:
                what = "missing" if got is None else f"{got.hex()}, not {h.hex()}"
                self.difference = f"tree node ({level}, {idx}): {what}"
                return

    async def finish(self, conn: db.Connection) -> None:
        """After the last entry: no stored node beyond the ones the entries complete."""
        if self.difference is None:
            count = await tree_store.node_count(conn)
            if count != self.nodes:
                self.difference = (f"{count} tree nodes stored, the {self.frontier.size} "
                                   f"entries complete {self.nodes}")
