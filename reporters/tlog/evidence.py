"""Evidence roots (SPEC §8 r2): the Merkle root over the ids of an agent's own file.

``evidence.root`` in a report is the §8.1 tree hash — leaf data the 32 raw bytes of each
entry id — over the entries of the agent's file (§9) whose seq is at most the report's
``ledger.seq`` (the seal's ``seq``: the epoch's last entry), in seq order. The bureau
computes it when it builds the report; the agent recomputes it from the file it reads,
so either both saw the same entries or the roots differ.

A server that builds reports epoch after epoch can keep one
:class:`reporters.tlog.merkle.Frontier` per agent and extend it with the entries the
agent's file gained: the file only grows at its end, in seq order.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from reporters.tlog.merkle import entry_leaf_hash, root_of


def _leaves(entries: Iterable[Mapping[str, Any] | tuple[int, str]],
            seal_seq: int) -> Iterator[bytes]:
    last = 0
    for item in entries:
        seq, entry_id = (item["seq"], item["id"]) if isinstance(item, Mapping) else item
        if type(seq) is not int or seq <= last:
            raise ValueError(f"entries come in increasing seq order; {seq!r} follows {last}")
        last = seq
        if seq > seal_seq:
            return
        if not isinstance(entry_id, str):
            raise ValueError(f"entry {seq}'s id is a string")
        yield entry_leaf_hash(entry_id)


def evidence_root(entries: Iterable[Mapping[str, Any] | tuple[int, str]],
                  seal_seq: int) -> bytes:
    """The evidence root over ``entries`` — §9 entries (mappings with ``seq`` and
    ``id``) or ``(seq, id)`` pairs, in increasing seq order — up to ``seal_seq``.
    Entries after ``seal_seq`` may follow and are not read. Raises ``ValueError`` for
    seqs out of order or ids that are not 64 lowercase hex digits."""
    return root_of(_leaves(entries, seal_seq))
