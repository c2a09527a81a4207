"""Verification from anywhere: notes, proofs and evidence roots as the bureau serves them.

These take what the §9 routes return (JSON with lowercase hex hashes, notes as text)
and the keys a client pinned, check them with :mod:`reporters.tlog`, and raise
:class:`VerificationError` (``path`` a JSON Pointer into the argument) on any failure.
All pure: no I/O, no clock.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from reporters._internal.errors import VerificationError
from reporters.tlog import verify as tlog_verify
from reporters.tlog.checkpoint import VerifiedCheckpoint, open_checkpoint
from reporters.tlog.errors import TlogError
from reporters.tlog.evidence import evidence_root as _evidence_root
from reporters.tlog.merkle import entry_leaf_hash
from reporters.tlog.note import COSIGNATURE_V1, ED25519, Verifier

_HEX32 = re.compile(r"[0-9a-f]{64}")


def _verifier(vkey: str, sig_type: int, path: str) -> Verifier:
    try:
        verifier = Verifier.from_vkey(vkey)
    except TlogError as exc:
        raise VerificationError("BAD_KEY", path, exc.detail) from None
    if verifier.sig_type != sig_type:
        raise VerificationError("BAD_KEY", path, f"a key of signature type {sig_type:#04x} "
                                                 f"is needed, not {verifier.sig_type:#04x}")
    return verifier


def verify_note(note: str | bytes, bureau_vkey: str, *, witnesses: Sequence[str] = (),
                threshold: int = 0) -> VerifiedCheckpoint:
    """Check a checkpoint note (``GET /checkpoint``, ``/v1/checkpoints/{epoch}/note``)
    against the bureau's vkey (from ``/v1/bureau``, pinned) and, optionally, witness
    cosignature vkeys of which at least ``threshold`` must have cosigned. Returns the
    verified checkpoint (origin, size, root, the cosignatures that verified).

    Codes: ``BAD_NOTE``, ``BAD_KEY`` (a malformed vkey, or no signature by the bureau's),
    ``BAD_SIGNATURE``, ``TOO_FEW_COSIGNATURES``.
    """
    log = _verifier(bureau_vkey, ED25519, "")
    cosigners = [_verifier(w, COSIGNATURE_V1, f"/witnesses/{i}") for i, w in enumerate(witnesses)]
    if not 0 <= threshold <= len(cosigners):
        raise ValueError(f"a threshold of {threshold} out of {len(cosigners)} witnesses")
    try:
        return open_checkpoint(note, log, witnesses=cosigners, threshold=threshold)
    except TlogError as exc:
        raise VerificationError(exc.code, "", exc.detail) from None


def _size(doc: Mapping[str, Any], name: str) -> int:
    value = doc.get(name)
    if type(value) is not int or value < 0:
        raise VerificationError("BAD_PROOF", f"/{name}", f"{name} is a non-negative integer")
    return value


def _hashes(doc: Mapping[str, Any]) -> list[bytes]:
    hashes = doc.get("hashes")
    if not isinstance(hashes, list):
        raise VerificationError("BAD_PROOF", "/hashes", "hashes is a list")
    for i, h in enumerate(hashes):
        if not isinstance(h, str) or not _HEX32.fullmatch(h):
            raise VerificationError("BAD_PROOF", f"/hashes/{i}", "a hash is 64 lowercase hex")
    return [bytes.fromhex(h) for h in hashes]


def _root(root: str | VerifiedCheckpoint, size: int, path: str) -> bytes:
    if isinstance(root, VerifiedCheckpoint):
        if root.size != size:
            raise VerificationError("BAD_PROOF", path, f"the proof is for size {size}, the "
                                                       f"checkpoint has size {root.size}")
        return root.root
    if not isinstance(root, str) or not _HEX32.fullmatch(root):
        raise VerificationError("BAD_PROOF", path, "a root is 64 lowercase hex digits")
    return bytes.fromhex(root)


def verify_inclusion(entry_id: str, proof: Mapping[str, Any],
                     root: str | VerifiedCheckpoint) -> None:
    """Check that entry ``entry_id`` is in the tree ``root`` names, by the §9 inclusion
    proof ``{"leaf_index", "tree_size", "hashes"}``. ``root`` is a hex root of a tree
    of ``tree_size`` leaves, or a verified checkpoint of that size. Code: ``BAD_PROOF``."""
    if not isinstance(proof, Mapping):
        raise VerificationError("BAD_PROOF", "", "a proof is a JSON object")
    index, size = _size(proof, "leaf_index"), _size(proof, "tree_size")
    hashes = _hashes(proof)
    expected = _root(root, size, "/tree_size")
    try:
        leaf = entry_leaf_hash(entry_id)
    except (ValueError, TypeError):
        raise VerificationError("BAD_PROOF", "", "an entry id is 64 lowercase hex") from None
    try:
        tlog_verify.verify_inclusion(leaf, index, size, hashes, expected)
    except TlogError as exc:
        raise VerificationError(exc.code, "", exc.detail) from None


def verify_consistency(proof: Mapping[str, Any], old: str | VerifiedCheckpoint,
                       new: str | VerifiedCheckpoint) -> None:
    """Check that the tree ``old`` names is a prefix of the tree ``new`` names, by the §9
    consistency proof ``{"from", "to", "hashes"}``. ``old``/``new`` are hex roots of trees
    of ``from``/``to`` leaves, or verified checkpoints of those sizes. Code: ``BAD_PROOF``."""
    if not isinstance(proof, Mapping):
        raise VerificationError("BAD_PROOF", "", "a proof is a JSON object")
    old_size, new_size = _size(proof, "from"), _size(proof, "to")
    hashes = _hashes(proof)
    old_root, new_root = _root(old, old_size, "/from"), _root(new, new_size, "/to")
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
