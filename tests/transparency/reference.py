"""The Merkle tree by its definition, from scratch: the tests' independent oracle.

RFC 9162 §2.1.1 (MTH), §2.1.3.1 (PATH) and §2.1.4.1 (PROOF/SUBPROOF) written as the RFC
states them, recursively over the list of leaf *data*, sharing no code with
``reporters.tlog``: no stored nodes, no ranges, no folds.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence


def _h(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def _k(n: int) -> int:
    k = 1
    while k * 2 < n:
        k *= 2
    return k


def mth(leaves: Sequence[bytes]) -> bytes:
    """MTH(D[n])."""
    if not leaves:
        return _h(b"")
    if len(leaves) == 1:
        return _h(b"\x00" + leaves[0])
    k = _k(len(leaves))
    return _h(b"\x01" + mth(leaves[:k]) + mth(leaves[k:]))


def path(m: int, leaves: Sequence[bytes]) -> list[bytes]:
    """PATH(m, D[n])."""
    if len(leaves) == 1:
        return []
    k = _k(len(leaves))
    if m < k:
        return [*path(m, leaves[:k]), mth(leaves[k:])]
    return [*path(m - k, leaves[k:]), mth(leaves[:k])]


def _subproof(m: int, leaves: Sequence[bytes], b: bool) -> list[bytes]:
    n = len(leaves)
    if m == n:
        return [] if b else [mth(leaves)]
    k = _k(n)
    if m <= k:
        return [*_subproof(m, leaves[:k], b), mth(leaves[k:])]
    return [*_subproof(m - k, leaves[k:], False), mth(leaves[:k])]


def proof(m: int, leaves: Sequence[bytes]) -> list[bytes]:
    """PROOF(m, D[n]) for 0 < m < n; the empty list for m = 0 or m = n (SPEC §9)."""
    if m == 0 or m == len(leaves):
        return []
    return _subproof(m, leaves, True)
