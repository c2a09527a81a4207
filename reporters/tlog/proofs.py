"""Inclusion and consistency proofs (RFC 9162 §2.1.3.1, §2.1.4.1) served from stored nodes.

Every hash in an RFC 9162 proof is the tree hash of a leaf range that the RFC's
recursion names (``PATH`` and ``SUBPROOF``). A :class:`ProofPlan` is that list of
ranges, computed from the index and sizes alone; each range is tiled by at most
``log2 n`` complete nodes (:func:`reporters.tlog.merkle.subtree_nodes`), and a proof's
ranges share most of them, so a proof needs ``O(log n)`` stored nodes in all. A server
serves any proof for any size up to its current one in two steps:

1. ``plan = inclusion_plan(index, size)`` (or :func:`consistency_plan`, :func:`root_plan`);
   fetch ``plan.nodes`` in one query;
2. ``plan.hashes(fetched)`` is the proof, bottom-up, as RFC 9162 lists it.

:func:`inclusion_proof`, :func:`consistency_proof` and :func:`root_at` do both steps with a
lookup callable.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from reporters.tlog.merkle import (
    EMPTY_ROOT,
    Node,
    NodeLookup,
    fold_right,
    largest_power_of_two_below,
    subtree_nodes,
)

Range = tuple[int, int]


@dataclass(frozen=True)
class ProofPlan:
    """The leaf ranges whose tree hashes make a proof (or a root), in order, and the
    stored nodes they need."""

    ranges: tuple[Range, ...]
    nodes: frozenset[Node] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "nodes", frozenset(
            node for start, end in self.ranges for node in subtree_nodes(start, end)))

    def hashes(self, stored: Mapping[Node, bytes] | NodeLookup) -> list[bytes]:
        """The proof: each range's tree hash, computed from the fetched nodes.
        ``stored`` maps (or looks up) at least every node in :attr:`nodes`."""
        get: Callable[[Node], bytes] = (stored.__getitem__ if isinstance(stored, Mapping)
                                        else stored)
        return [fold_right([get(node) for node in subtree_nodes(start, end)])
                for start, end in self.ranges]


def _path(index: int, start: int, end: int, out: list[Range]) -> None:
    """RFC 9162 PATH(index, D[start:end]), as ranges, bottom-up."""
    size = end - start
    if size == 1:
        return
    k = largest_power_of_two_below(size)
    if index < k:
        _path(index, start, start + k, out)
        out.append((start + k, end))
    else:
        _path(index - k, start + k, end, out)
        out.append((start, start + k))


def _subproof(old: int, start: int, end: int, whole: bool, out: list[Range]) -> None:
    """RFC 9162 SUBPROOF(old, D[start:end], whole), as ranges, bottom-up."""
    size = end - start
    if old == size:
        if not whole:
            out.append((start, end))
        return
    k = largest_power_of_two_below(size)
    if old <= k:
        _subproof(old, start, start + k, whole, out)
        out.append((start + k, end))
    else:
        _subproof(old - k, start + k, end, False, out)
        out.append((start, start + k))


def inclusion_plan(index: int, size: int) -> ProofPlan:
    """The plan of the inclusion proof of leaf ``index`` in the tree of ``size`` leaves."""
    if not 0 <= index < size:
        raise ValueError(f"leaf {index} is not in a tree of size {size}")
    ranges: list[Range] = []
    _path(index, 0, size, ranges)
    return ProofPlan(tuple(ranges))


def consistency_plan(old_size: int, new_size: int) -> ProofPlan:
    """The plan of the consistency proof from ``old_size`` to ``new_size``; empty when
    ``old_size`` is 0 or equal to ``new_size`` (SPEC §9)."""
    if not 0 <= old_size <= new_size:
        raise ValueError(f"no consistency proof from size {old_size} to {new_size}")
    ranges: list[Range] = []
    if 0 < old_size < new_size:
        _subproof(old_size, 0, new_size, True, ranges)
    return ProofPlan(tuple(ranges))


def root_plan(size: int) -> ProofPlan:
    """The plan of the root at ``size``: one range (none for the empty tree; use
    :func:`root_from_plan`)."""
    if size < 0:
        raise ValueError("a tree size is not negative")
    return ProofPlan(((0, size),) if size else ())


def root_from_plan(plan: ProofPlan, stored: Mapping[Node, bytes] | NodeLookup) -> bytes:
    """The root a :func:`root_plan` names."""
    hashes = plan.hashes(stored)
    return hashes[0] if hashes else EMPTY_ROOT


def root_at(size: int, lookup: NodeLookup) -> bytes:
    """The root of the tree of the first ``size`` leaves, from at most ``log2 size``
    stored nodes."""
    return root_from_plan(root_plan(size), lookup)


def inclusion_proof(index: int, size: int, lookup: NodeLookup) -> list[bytes]:
    """RFC 9162 inclusion proof of leaf ``index`` in the tree of ``size`` leaves."""
    return inclusion_plan(index, size).hashes(lookup)


def consistency_proof(old_size: int, new_size: int, lookup: NodeLookup) -> list[bytes]:
    """RFC 9162 consistency proof from ``old_size`` to ``new_size``."""
    return consistency_plan(old_size, new_size).hashes(lookup)
