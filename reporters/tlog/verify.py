"""Checking inclusion and consistency proofs: RFC 9162 §2.1.3.2 and §2.1.4.2, step by step.

Both functions are pure and raise :class:`TlogError` (``BAD_PROOF``) on any failure;
returning means the proof holds. Hashes are 32-byte ``bytes``.

One choice the RFC leaves to the verifier: a consistency proof *from the empty tree*
(``old_size == 0``) is the empty list and holds exactly when the old root is the empty
tree's root — the empty tree is a prefix of every tree, as C2SP tlog-witness also says
(``old 0`` with no proof lines). (transparency-dev/merkle refuses every proof from size
0 instead; the bureau serves ``[]`` for it, SPEC §9.)
"""

from __future__ import annotations

from collections.abc import Sequence

from reporters.tlog.errors import TlogError
from reporters.tlog.merkle import EMPTY_ROOT, HASH_SIZE, node_hash

#: No tree of up to 2^64 leaves needs longer proofs.
MAX_PROOF_HASHES = 64


def _check_hashes(proof: Sequence[bytes], *named: tuple[str, bytes]) -> None:
    if len(proof) > MAX_PROOF_HASHES:
        raise TlogError("BAD_PROOF", f"a proof has at most {MAX_PROOF_HASHES} hashes")
    for i, h in enumerate(proof):
        if not isinstance(h, bytes) or len(h) != HASH_SIZE:
            raise TlogError("BAD_PROOF", f"proof hash {i} is not {HASH_SIZE} bytes")
    for name, h in named:
        if not isinstance(h, bytes) or len(h) != HASH_SIZE:
            raise TlogError("BAD_PROOF", f"the {name} is not {HASH_SIZE} bytes")


def _shift_while_lsb_clear(fn: int, sn: int) -> tuple[int, int]:
    """Right-shift both until LSB(fn) is set or fn is 0."""
    while fn & 1 == 0 and fn != 0:
        fn, sn = fn >> 1, sn >> 1
    return fn, sn


def verify_inclusion(leaf: bytes, index: int, size: int, proof: Sequence[bytes],
                     root: bytes) -> None:
    """Check that ``leaf`` (a leaf *hash*) is leaf ``index`` of the tree of ``size``
    leaves whose root is ``root`` (RFC 9162 §2.1.3.2)."""
    _check_hashes(proof, ("leaf hash", leaf), ("root", root))
    # 1. leaf_index < tree_size.
    if not 0 <= index < size:
        raise TlogError("BAD_PROOF", f"leaf index {index} is not below tree size {size}")
    # 2-3. fn = leaf_index, sn = tree_size - 1, r = hash.
    fn, sn, r = index, size - 1, leaf
    # 4. For each p in inclusion_path:
    for p in proof:
        if sn == 0:  # a. a path longer than the tree is tall
            raise TlogError("BAD_PROOF", "the proof has more hashes than the tree has levels")
        if fn & 1 or fn == sn:  # b. p is the left sibling
            r = node_hash(p, r)
            if not fn & 1:
                fn, sn = _shift_while_lsb_clear(fn, sn)
        else:  # p is the right sibling
            r = node_hash(r, p)
        fn, sn = fn >> 1, sn >> 1  # c.
    # 5. sn is 0 and r is the root.
    if sn != 0:
        raise TlogError("BAD_PROOF", "the proof has fewer hashes than the tree has levels")
    if r != root:
        raise TlogError("BAD_PROOF", f"the proof leads to root {r.hex()}, not {root.hex()}")


def verify_consistency(old_size: int, new_size: int, old_root: bytes, new_root: bytes,
                       proof: Sequence[bytes]) -> None:
    """Check that the tree of ``old_size`` leaves with root ``old_root`` is a prefix of
    the tree of ``new_size`` leaves with root ``new_root`` (RFC 9162 §2.1.4.2)."""
    _check_hashes(proof, ("old root", old_root), ("new root", new_root))
    if not 0 <= old_size <= new_size:
        raise TlogError("BAD_PROOF", f"no consistency from size {old_size} to {new_size}")
    if old_size == 0 or old_size == new_size:
        if proof:
            raise TlogError("BAD_PROOF", "the proof between these sizes is empty")
        if old_size == 0 and old_root != EMPTY_ROOT:
            raise TlogError("BAD_PROOF", "the old root is not the empty tree's root")
        if old_size == new_size and old_root != new_root:
            raise TlogError("BAD_PROOF", "equal sizes with different roots")
        return
    # 1. An empty path fails.
    if not proof:
        raise TlogError("BAD_PROOF", "the proof is empty")
    path = list(proof)
    # 2. If first is an exact power of 2, prepend first_hash.
    if old_size & (old_size - 1) == 0:
        path.insert(0, old_root)
    # 3. fn = first - 1, sn = second - 1.
    fn, sn = old_size - 1, new_size - 1
    # 4. If LSB(fn) is set, right-shift both until it is not.
    while fn & 1:
        fn, sn = fn >> 1, sn >> 1
    # 5. fr = sr = the first value of the path.
    fr = sr = path[0]
    # 6. For each subsequent value c:
    for c in path[1:]:
        if sn == 0:  # a.
            raise TlogError("BAD_PROOF", "the proof has more hashes than the trees need")
        if fn & 1 or fn == sn:  # b.
            fr, sr = node_hash(c, fr), node_hash(c, sr)
            if not fn & 1:
                fn, sn = _shift_while_lsb_clear(fn, sn)
        else:
            sr = node_hash(sr, c)
        fn, sn = fn >> 1, sn >> 1  # c.
    # 7. fr is first_hash, sr is second_hash, sn is 0.
    if sn != 0:
        raise TlogError("BAD_PROOF", "the proof has fewer hashes than the trees need")
    if fr != old_root:
        raise TlogError("BAD_PROOF", f"the proof leads to old root {fr.hex()}, "
                                     f"not {old_root.hex()}")
    if sr != new_root:
        raise TlogError("BAD_PROOF", f"the proof leads to new root {sr.hex()}, "
                                     f"not {new_root.hex()}")
