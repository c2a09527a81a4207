"""Verification from anywhere: notes, proofs and evidence roots as the bureau serves them.

These take what the §9 routes return (JSON with lowercase hex hashes, notes as text)
and the keys a client pinned, check them with :mod:`reporters.tlog`, and raise
:class:`VerificationError` (``path`` a JSON Pointer into the argument) on any failure.
A proof is checked against what the *caller* holds — a :class:`TreeHead` (size and
root) or a verified note — never against sizes the answer states: an answer whose
sizes are not the caller's is refused. All pure: no I/O, no clock.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from reporters._internal.errors import VerificationError
from reporters._internal.keyhistory import BureauKey, KeyHistory
from reporters.tlog import verify as tlog_verify
from reporters.tlog.checkpoint import Checkpoint, VerifiedCheckpoint, open_checkpoint
from reporters.tlog.errors import TlogError
from reporters.tlog.evidence import evidence_root as _evidence_root
from reporters.tlog.merkle import entry_leaf_hash
from reporters.tlog.note import COSIGNATURE_V1, ED25519, Verifier, parse_note

_HEX32 = re.compile(r"[0-9a-f]{64}")


class TreeHead(NamedTuple):
    """A tree as the caller holds it: its size and its root (64 lowercase hex digits).
    A root alone binds no size, so a proof is only ever checked against both."""

    size: int
    root: str


#: What a proof is checked against: a tree head the caller holds, or a verified note.
Tree = TreeHead | VerifiedCheckpoint


def _verifier(vkey: str, sig_type: int, path: str) -> Verifier:
    try:
        verifier = Verifier.from_vkey(vkey)
    except TlogError as exc:
        raise VerificationError("BAD_KEY", path, exc.detail) from None
    if verifier.sig_type != sig_type:
        raise VerificationError("BAD_KEY", path, f"a key of signature type {sig_type:#04x} "
                                                 f"is needed, not {verifier.sig_type:#04x}")
    return verifier


def verify_note(note: str | bytes, bureau_vkey: str | KeyHistory, *,
                witnesses: Sequence[str] = (), threshold: int = 0) -> VerifiedCheckpoint:
    """Check a checkpoint note (``GET /checkpoint``, ``/v1/checkpoints/{epoch}/note``)
    against the bureau's vkey (from ``/v1/bureau``, pinned) — or its
    :class:`KeyHistory`, then against the key in force at the note's tree size — and,
    optionally, witness cosignature vkeys of which at least ``threshold`` must have
    cosigned. Returns the verified checkpoint (origin, size, root, the cosignatures
    that verified).

    Codes: ``BAD_NOTE``, ``BAD_KEY`` (a malformed vkey, or no signature by the bureau's
    key in force at that size), ``BAD_SIGNATURE``, ``TOO_FEW_COSIGNATURES``.
    """
    cosigners = [_verifier(w, COSIGNATURE_V1, f"/witnesses/{i}") for i, w in enumerate(witnesses)]
    if not 0 <= threshold <= len(cosigners):
        raise ValueError(f"a threshold of {threshold} out of {len(cosigners)} witnesses")
    expected: tuple[int, BureauKey] | None = None
    try:
        if isinstance(bureau_vkey, KeyHistory):
            size = Checkpoint.parse(parse_note(note).text).size  # the signature binds it
            expected = size, bureau_vkey.at(size)
            log = expected[1].verifier
        else:
            log = _verifier(bureau_vkey, ED25519, "")
        return open_checkpoint(note, log, witnesses=cosigners, threshold=threshold)
    except TlogError as exc:
        if exc.code == "BAD_KEY" and expected is not None:
            raise VerificationError("BAD_KEY", "", f"the note of size {expected[0]} is not "
                                    f"signed by {expected[1].key_id}, the key in force "
                                    f"there (from seq {expected[1].from_seq})") from None
        raise VerificationError(exc.code, "", exc.detail) from None


def _size(doc: Mapping[str, Any], name: str) -> int:
    value = doc.get(name)
    if type(value) is not int or value < 0:
        raise VerificationError("BAD_PROOF", f"/{name}", f"{name} is a non-negative integer")
    return value


def _answered(doc: Mapping[str, Any], name: str, expected: int | None) -> int:
    """A size the answer states: it must be the caller's, when the caller has one."""
    value = _size(doc, name)
    if expected is not None and value != expected:
        raise VerificationError("BAD_PROOF", f"/{name}", f"the proof is for {name} {value}; "
                                                         f"the one checked is {expected}")
    return value


def _hashes(doc: Mapping[str, Any]) -> list[bytes]:
    hashes = doc.get("hashes")
    if not isinstance(hashes, list):
        raise VerificationError("BAD_PROOF", "/hashes", "hashes is a list")
    if len(hashes) > tlog_verify.MAX_PROOF_HASHES:
        raise VerificationError("BAD_PROOF", "/hashes", f"a proof has at most "
                                                        f"{tlog_verify.MAX_PROOF_HASHES} hashes")
    for i, h in enumerate(hashes):
        if not isinstance(h, str) or not _HEX32.fullmatch(h):
            raise VerificationError("BAD_PROOF", f"/hashes/{i}", "a hash is 64 lowercase hex")
    return [bytes.fromhex(h) for h in hashes]


def _tree(tree: Tree) -> tuple[int, bytes]:
    if isinstance(tree, VerifiedCheckpoint):
        return tree.size, tree.root
    if not isinstance(tree, tuple):
        raise TypeError("a proof is checked against a TreeHead(size, root) or a "
                        "VerifiedCheckpoint: a root alone binds no size")
    size, root = tree
    if type(size) is not int or size < 0:
        raise TypeError("a tree size is a non-negative integer")
    if not isinstance(root, str) or not _HEX32.fullmatch(root):
        raise TypeError("a tree root is 64 lowercase hex digits")
    return size, bytes.fromhex(root)


def verify_inclusion(entry_id: str, proof: Mapping[str, Any], tree: Tree, *,
                     leaf_index: int | None = None) -> int:
    """Check that entry ``entry_id`` is leaf ``leaf_index`` (its seq − 1) of ``tree``
    (a :class:`TreeHead` or a verified checkpoint), by the §9 inclusion proof
    ``{"leaf_index", "tree_size", "hashes"}``. The tree size and, when given, the leaf
    index are the caller's; an answer stating others is refused (path ``/tree_size``,
    ``/leaf_index``). Without ``leaf_index`` the index proven is returned (a proof
    cannot place one leaf at two indices of one tree). Code: ``BAD_PROOF``."""
    size, root = _tree(tree)
    if not isinstance(proof, Mapping):
        raise VerificationError("BAD_PROOF", "", "a proof is a JSON object")
    _answered(proof, "tree_size", size)
    index = _answered(proof, "leaf_index", leaf_index)
    hashes = _hashes(proof)
    try:
        leaf = entry_leaf_hash(entry_id)
    except (ValueError, TypeError):
        raise VerificationError("BAD_PROOF", "", "an entry id is 64 lowercase hex") from None
    try:
        tlog_verify.verify_inclusion(leaf, index, size, hashes, root)
    except TlogError as exc:
        raise VerificationError(exc.code, "", exc.detail) from None
    return index


def verify_consistency(proof: Mapping[str, Any], old: Tree, new: Tree) -> None:
    """Check that the tree ``old`` is a prefix of the tree ``new`` (each a
    :class:`TreeHead` or a verified checkpoint), by the §9 consistency proof
    ``{"from", "to", "hashes"}``. Both sizes are the caller's: an answer whose
    ``from`` or ``to`` differs is refused (path ``/from``, ``/to``). Code: ``BAD_PROOF``."""
    (old_size, old_root), (new_size, new_root) = _tree(old), _tree(new)
    if not isinstance(proof, Mapping):
        raise VerificationError("BAD_PROOF", "", "a proof is a JSON object")
    _answered(proof, "from", old_size)
    _answered(proof, "to", new_size)
    hashes = _hashes(proof)
    try:
        tlog_verify.verify_consistency(old_size, new_size, old_root, new_root, hashes)
    except TlogError as exc:
        raise VerificationError(exc.code, "", exc.detail) from None


def evidence_root(entries: Iterable[Mapping[str, Any]], seal_seq: int) -> str:
    """The evidence root (SPEC §8: ``evidence.root`` of a report) over an agent's file as
    ``GET /v1/agents/{agent}/entries`` lists it, every page joined, in seq order:
    the Merkle root over the ids of its entries with ``seq <= seal_seq`` (the report's
    ``ledger.seq``), in lowercase hex. Codes: ``BROKEN_CHAIN`` (seqs not increasing),
    ``BAD_ENTRY_ID`` (an id that is not 64 lowercase hex)."""
    pairs: list[tuple[int, str]] = []
    last = 0
    for i, entry in enumerate(entries):
        seq = entry.get("seq") if isinstance(entry, Mapping) else None
        if type(seq) is not int or seq <= last:
            raise VerificationError("BROKEN_CHAIN", f"/{i}/seq",
                                    f"seqs increase along the file; {seq!r} follows {last}")
        last = seq
        if seq > seal_seq:
            break
        entry_id = entry.get("id")
        if not isinstance(entry_id, str) or not _HEX32.fullmatch(entry_id):
            raise VerificationError("BAD_ENTRY_ID", f"/{i}/id", "an id is 64 lowercase hex")
        pairs.append((seq, entry_id))
    return _evidence_root(pairs, seal_seq).hex()
