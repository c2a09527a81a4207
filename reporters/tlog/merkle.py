"""The ledger's Merkle tree (SPEC §8.1): RFC 6962 hashing and the nodes a server stores.

Hashing is RFC 6962 / RFC 9162 §2.1.1: SHA-256, ``leaf_hash(d) = H(0x00 ‖ d)``,
``node_hash(l, r) = H(0x01 ‖ l ‖ r)``, and the empty tree's root is ``H("")``. The
bureau's leaf ``i`` (0-based) is entry seq ``i + 1`` and its leaf data is the 32 raw
bytes of the entry id (:func:`entry_leaf_hash`).

**The storage model.** A *node* ``(level, index)`` is the perfect subtree over leaves
``[index·2^level, (index+1)·2^level)``; level 0 are the leaves. A node is *complete*
once the tree has all its leaves, and from then on its hash never changes. A server
stores the hash of every complete node (about two per leaf); nothing else. Then:

* the root at any size ``n`` is a right fold over the at most ``log2 n`` nodes that tile
  ``[0, n)`` (:func:`subtree_nodes`, :func:`fold_right`), and every inclusion or
  consistency proof at any size up to the current one is a handful of such tilings
  (:mod:`reporters.tlog.proofs`): ``O(log n)`` node reads, no recomputation over the
  ledger;
* appending leaves ``[a, b)`` completes exactly the nodes :meth:`Frontier.extend` returns
  (about ``2(b − a) + log2 b`` of them), computed from the new leaf hashes and the at most
  ``log2 a`` nodes that tile ``[0, a)`` — the :class:`Frontier`, which an appender can keep
  in memory between appends or read back with one query (:meth:`Frontier.nodes_at`).

Everything here is pure: no I/O, no clock. Hashes are 32-byte ``bytes``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

HASH_SIZE = 32

#: The root of the empty tree: SHA-256 of the empty string.
EMPTY_ROOT = hashlib.sha256(b"").digest()

_ENTRY_ID = re.compile(r"[0-9a-f]{64}")

#: ``(level, index)``: the perfect subtree over leaves [index << level, (index + 1) << level).
Node = tuple[int, int]

#: Reads one stored node hash (a dict's ``__getitem__`` will do).
NodeLookup = Callable[[Node], bytes]


def leaf_hash(data: bytes) -> bytes:
    """RFC 6962 leaf hash: ``SHA-256(0x00 ‖ data)``."""
    return hashlib.sha256(b"\x00" + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """RFC 6962 interior node hash: ``SHA-256(0x01 ‖ left ‖ right)``."""
    return hashlib.sha256(b"\x01" + left + right).digest()


def entry_leaf_hash(entry_id: str) -> bytes:
    """The leaf hash of a ledger entry: the leaf data is the 32 raw bytes its id names
    (64 lowercase hex digits)."""
    if not _ENTRY_ID.fullmatch(entry_id):
        raise ValueError(f"an entry id is 64 lowercase hex digits, not {entry_id!r}")
    return leaf_hash(bytes.fromhex(entry_id))


def largest_power_of_two_below(n: int) -> int:
    """RFC 9162's ``k``: the largest power of two strictly less than ``n`` (n ≥ 2)."""
    if n < 2:
        raise ValueError("k is defined for n >= 2")
    return 1 << ((n - 1).bit_length() - 1)


def subtree_nodes(start: int, end: int) -> list[Node]:
    """The perfect nodes that tile the leaf range ``[start, end)``, left to right and
    largest first, for a range that is a subtree of the RFC 6962 recursion: ``start`` is a
    multiple of a power of two at least ``end − start`` (every range a root or a proof
    hashes is one). The range's tree hash is the right fold of their hashes
    (:func:`fold_right`): this is MTH's split at the largest power of two, unrolled.
    """
    size = end - start
    if size <= 0 or start < 0:
        raise ValueError(f"[{start}, {end}) is not a non-empty leaf range")
    if start % (1 << (size - 1).bit_length()):
        raise ValueError(f"[{start}, {end}) is not a subtree: start is not aligned")
    nodes: list[Node] = []
    position = start
    for level in range(size.bit_length() - 1, -1, -1):
        if size >> level & 1:
            nodes.append((level, position >> level))
            position += 1 << level
    return nodes


def fold_right(hashes: Sequence[bytes]) -> bytes:
    """Combine the hashes of a range's tiling into the range's tree hash:
    ``node_hash(h0, node_hash(h1, … node_hash(h[-2], h[-1])))``."""
    if not hashes:
        raise ValueError("a non-empty range has at least one node")
    acc = hashes[-1]
    for h in reversed(hashes[:-1]):
        acc = node_hash(h, acc)
    return acc


def _grow(peaks: list[tuple[int, int, bytes]], position: int,
          leaf_hashes: Iterable[bytes]) -> Iterator[tuple[int, int, bytes]]:
    """Append leaves at ``position`` onward to ``peaks`` (the tiling of ``[0, position)``
    as ``(level, index, hash)``, largest first), yielding every node that becomes
    complete. Adding a leaf is a binary increment: equal neighbours merge upwards."""
    for h in leaf_hashes:
        if len(h) != HASH_SIZE:
            raise ValueError("a leaf hash is 32 bytes")
        node = (0, position, h)
        position += 1
        yield node
        while peaks and peaks[-1][0] == node[0]:
            level, index, left = peaks.pop()
            node = (level + 1, index >> 1, node_hash(left, node[2]))
            yield node
        peaks.append(node)


class RootAccumulator:
    """A tree's root as its leaves come in one at a time, in ``O(log n)`` memory: the
    frontier's hashes without their positions, for a caller that only wants roots and
    keeps many of them (the bureau keeps one per agent's file: an evidence root)."""

    __slots__ = ("_peaks", "size")

    def __init__(self) -> None:
        self.size = 0
        #: (level, hash) of the perfect subtrees that tile the leaves so far, largest first
        self._peaks: list[tuple[int, bytes]] = []

    def push(self, leaf: bytes) -> None:
        """Append one leaf *hash*. A binary increment: equal neighbours merge upwards."""
        level, h, peaks = 0, leaf, self._peaks
        while peaks and peaks[-1][0] == level:
            h = node_hash(peaks.pop()[1], h)
            level += 1
        peaks.append((level, h))
        self.size += 1

    def root(self) -> bytes:
        return fold_right([h for _, h in self._peaks]) if self._peaks else EMPTY_ROOT


def root_of(leaf_hashes: Iterable[bytes]) -> bytes:
    """The root over a sequence of leaf hashes, streamed in ``O(log n)`` memory."""
    acc = RootAccumulator()
    for h in leaf_hashes:
        if len(h) != HASH_SIZE:
            raise ValueError("a leaf hash is 32 bytes")
        acc.push(h)
    return acc.root()


@dataclass(frozen=True)
class Frontier:
    """The right edge of the tree at ``size``: the hashes of the nodes that tile
    ``[0, size)`` (``nodes_at(size)``), largest first. It is all an appender needs to
    compute the root and every node the next leaves complete."""

    size: int
    peaks: tuple[bytes, ...]

    def __post_init__(self) -> None:
        if self.size < 0 or len(self.peaks) != self.size.bit_count():
            raise ValueError(f"a tree of size {self.size} has {self.size.bit_count()} peaks")

    @staticmethod
    def nodes_at(size: int) -> list[Node]:
        """The nodes whose hashes make the frontier at ``size`` (read them in one query)."""
        return subtree_nodes(0, size) if size else []

    @classmethod
    def empty(cls) -> Frontier:
        return cls(0, ())

    @classmethod
    def load(cls, size: int, lookup: NodeLookup) -> Frontier:
        """The frontier at ``size`` from stored nodes."""
        return cls(size, tuple(lookup(node) for node in cls.nodes_at(size)))

    def root(self) -> bytes:
        return fold_right(self.peaks) if self.peaks else EMPTY_ROOT

    def extend(self, leaf_hashes: Iterable[bytes]
               ) -> tuple[Frontier, list[tuple[int, int, bytes]]]:
        """Append leaves: the frontier after them, and every ``(level, index, hash)`` node
        they complete, leaves included, in the order they complete. These are exactly
        the rows a server adds to its node store in the append's transaction."""
        peaks = [(level, index, h) for (level, index), h
                 in zip(self.nodes_at(self.size), self.peaks, strict=True)]
        completed = list(_grow(peaks, self.size, leaf_hashes))
        size = self.size + sum(1 for level, _, _ in completed if level == 0)
        return Frontier(size, tuple(h for _, _, h in peaks)), completed
