"""The published settlement (SPEC §8.2): allocation rows, their Merkle root, the public
document, and each evaluator's row with its inclusion proof.

* A row is the canonical JSON ``{"evaluator", "units", "score"}``; the rows are sorted
  by key id (byte order) and are the leaves, in that order, of a tree hashed as the
  ledger's is (§8.1: RFC 6962, leaf data the row's bytes). There is a row for every
  evaluator paid at least one unit, and for no other (one that scored too little to
  get a unit earned nothing, SPEC §9: ``{"units": 0}`` and no proof).
* The public document ``{"epoch", "pool", "paid", "unpaid", "evaluators", "root"}``
  names no evaluator: ``evaluators`` is how many were paid, which is also the number of
  leaves — so an evaluator checking its proof takes the tree's size from the signed
  document, never from the answer that carries the proof.

Pure: the same scores give the same bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from bureau.settlement.earn import SCALE, Earned, scoring
from bureau.settlement.split import largest_remainder
from reporters import wire
from reporters.tlog.merkle import EMPTY_ROOT, Node, leaf_hash, node_hash
from reporters.tlog.proofs import inclusion_proof, root_at

SETTLEMENT_TYPE = wire.payload_type("settlement")


@dataclass(frozen=True, slots=True)
class Allocation:
    """One epoch's settlement: the rows (canonical bytes, by key id) and the document."""

    epoch: int
    pool: int
    evaluators: tuple[str, ...]  # the rows' keys, in leaf order
    rows: tuple[bytes, ...]
    units: tuple[int, ...]

    @property
    def paid(self) -> int:
        return sum(self.units)

    @property
    def unpaid(self) -> int:
        return self.pool - self.paid

    @property
    def root(self) -> bytes:
        return rows_root(self.rows)

    def payload(self) -> dict[str, Any]:
        return {"epoch": self.epoch, "pool": self.pool, "paid": self.paid,
                "unpaid": self.unpaid, "evaluators": len(self.rows), "root": self.root.hex()}

    def payload_bytes(self) -> bytes:
        return wire.canonical_json(self.payload())

    def proof(self, leaf: int) -> list[bytes]:
        return row_proof(self.rows, leaf)


def row_bytes(evaluator: str, units: int, micro: int) -> bytes:
    return wire.canonical_json({"evaluator": evaluator, "units": units,
                                "score": micro / SCALE})


def allocate(epoch: int, pool: int, earned: Sequence[Earned]) -> Allocation:
    """Split ``pool`` over what the evaluators earned (:mod:`bureau.settlement.earn`)."""
    scores = scoring(earned)
    units = largest_remainder(pool, scores)
    keys = tuple(sorted((k for k in scores if units[k] > 0), key=str.encode))
    return Allocation(epoch, pool, keys,
                      tuple(row_bytes(k, units[k], scores[k]) for k in keys),
                      tuple(units[k] for k in keys))


def _lookup(rows: Sequence[bytes]) -> Any:
    """Node hashes of the rows' tree (every node a proof or root asks for is complete)."""
    @cache
    def node(at: Node) -> bytes:
        level, index = at
        if level == 0:
            return leaf_hash(rows[index])
        return node_hash(node((level - 1, 2 * index)), node((level - 1, 2 * index + 1)))
    return node


def rows_root(rows: Sequence[bytes]) -> bytes:
    """The §8.1 tree hash over the rows (leaf data: each row's bytes)."""
    return root_at(len(rows), _lookup(rows)) if rows else EMPTY_ROOT


def row_proof(rows: Sequence[bytes], leaf: int) -> list[bytes]:
    """RFC 9162 inclusion proof of row ``leaf`` in the tree of all ``rows``."""
    return inclusion_proof(leaf, len(rows), _lookup(rows))
