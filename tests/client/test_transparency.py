"""verify_note, verify_inclusion, verify_consistency and evidence_root: the client's checks
on what the §9 routes serve, against trees built here and the definition of the tree."""

from __future__ import annotations

import random
from typing import Any

import nacl.signing
import pytest

import reporters
from reporters.tlog import evidence, merkle, proofs
from reporters.tlog import verify as tlog_verify
from reporters.tlog.checkpoint import (
    Checkpoint,
    cosign,
    default_origin,
    log_signer,
    sign_checkpoint_note,
)
from reporters.tlog.note import COSIGNATURE_V1, Signer
from tests.client.test_verify import chain
from tests.transparency import reference as ref

BUREAU_KEY = nacl.signing.SigningKey(bytes(range(32)))
ORIGIN = default_origin(bytes(BUREAU_KEY.verify_key))
BUREAU_VKEY = log_signer(ORIGIN, BUREAU_KEY).verifier.vkey
WITNESSES = [Signer(f"w{i}.example", nacl.signing.SigningKey(bytes([i + 40]) * 32),
                    COSIGNATURE_V1) for i in range(3)]
WITNESS_VKEYS = [w.verifier.vkey for w in WITNESSES]


class Ledger:
    """Entry ids, the nodes a bureau would store for them, and notes it would sign."""

    def __init__(self, n: int) -> None:
        self.entries = chain(n)
        self.ids = [bytes.fromhex(e["id"]) for e in self.entries]
        _, nodes = merkle.Frontier.empty().extend(merkle.leaf_hash(i) for i in self.ids)
        self.nodes = {(level, index): h for level, index, h in nodes}

    def root(self, size: int) -> reporters.TreeHead:
        return reporters.TreeHead(size, proofs.root_at(size, self.nodes.__getitem__).hex())

    def inclusion(self, seq: int, size: int) -> dict[str, Any]:
        hashes = proofs.inclusion_proof(seq - 1, size, self.nodes.__getitem__)
        return {"leaf_index": seq - 1, "tree_size": size, "hashes": [h.hex() for h in hashes]}

    def consistency(self, old: int, new: int) -> dict[str, Any]:
        hashes = proofs.consistency_proof(old, new, self.nodes.__getitem__)
        return {"from": old, "to": new, "hashes": [h.hex() for h in hashes]}

    def note(self, size: int, witnesses: list[Signer] = WITNESSES[:2]) -> str:
        checkpoint = Checkpoint(ORIGIN, size, bytes.fromhex(self.root(size).root))
        return (sign_checkpoint_note(checkpoint, log_signer(ORIGIN, BUREAU_KEY))
                + "".join(cosign(checkpoint, w, 1_700_000_000) for w in witnesses))


LEDGER = Ledger(40)


def refused(call: Any, *args: Any, **kwargs: Any) -> tuple[str, str]:
    with pytest.raises(reporters.VerificationError) as info:
        call(*args, **kwargs)
    assert info.value.status is None
    return info.value.code, info.value.path


def test_a_note_verifies_with_its_witnesses() -> None:
    checkpoint = reporters.verify_note(LEDGER.note(30), BUREAU_VKEY, witnesses=WITNESS_VKEYS,
                                       threshold=2)
    assert isinstance(checkpoint, reporters.VerifiedCheckpoint)
    assert (checkpoint.origin, checkpoint.size, checkpoint.root_hex) == (
        ORIGIN, 30, LEDGER.root(30).root)
    assert [c.witness for c in checkpoint.cosignatures] == ["w0.example", "w1.example"]
    assert reporters.verify_note(LEDGER.note(30).encode(), BUREAU_VKEY).size == 30


def test_note_failures_have_their_codes() -> None:
    note = LEDGER.note(30)
    assert refused(reporters.verify_note, note, BUREAU_VKEY, witnesses=WITNESS_VKEYS,
                   threshold=3) == ("TOO_FEW_COSIGNATURES", "")
    assert refused(reporters.verify_note, note.replace("\n30\n", "\n31\n"),
                   BUREAU_VKEY) == ("BAD_SIGNATURE", "")
    other = log_signer(ORIGIN, nacl.signing.SigningKey(bytes(32))).verifier.vkey
    assert refused(reporters.verify_note, note, other) == ("BAD_KEY", "")
    assert refused(reporters.verify_note, note, "not a vkey") == ("BAD_KEY", "")
    assert refused(reporters.verify_note, note, BUREAU_VKEY,
                   witnesses=[BUREAU_VKEY]) == ("BAD_KEY", "/witnesses/0")
    assert refused(reporters.verify_note, note.replace("\u2014", "-"),
                   BUREAU_VKEY) == ("BAD_NOTE", "")


def test_every_entry_is_proven_included_in_every_tree_that_holds_it() -> None:
    for size in range(1, 41):
        checkpoint = reporters.verify_note(LEDGER.note(size, []), BUREAU_VKEY)
        for seq in range(1, size + 1):
            proof = LEDGER.inclusion(seq, size)
            entry_id = LEDGER.entries[seq - 1]["id"]
            assert reporters.verify_inclusion(entry_id, proof, LEDGER.root(size)) == seq - 1
            reporters.verify_inclusion(entry_id, proof, checkpoint, leaf_index=seq - 1)


def test_inclusion_failures_name_what_is_wrong() -> None:
    proof, entry_id = LEDGER.inclusion(7, 20), LEDGER.entries[6]["id"]
    root = LEDGER.root(20)
    assert refused(reporters.verify_inclusion, LEDGER.entries[7]["id"], proof, root)[0] == \
        "BAD_PROOF"
    assert refused(reporters.verify_inclusion, entry_id, proof, LEDGER.root(21)) == \
        ("BAD_PROOF", "/tree_size")
    checkpoint = reporters.verify_note(LEDGER.note(21, []), BUREAU_VKEY)
    assert refused(reporters.verify_inclusion, entry_id, proof, checkpoint) == \
        ("BAD_PROOF", "/tree_size")
    bad = {**proof, "hashes": [*proof["hashes"][:1], "XY" * 32, *proof["hashes"][2:]]}
    assert refused(reporters.verify_inclusion, entry_id, bad, root) == ("BAD_PROOF", "/hashes/1")
    assert refused(reporters.verify_inclusion, entry_id, {**proof, "leaf_index": True},
                   root) == ("BAD_PROOF", "/leaf_index")
    assert refused(reporters.verify_inclusion, entry_id, {**proof, "hashes": "x"}, root) == \
        ("BAD_PROOF", "/hashes")
    with pytest.raises(TypeError):  # a root of no size, or not hex
        reporters.verify_inclusion(entry_id, proof, root.root)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        reporters.verify_inclusion(entry_id, proof, reporters.TreeHead(20, root.root.upper()))
    assert refused(reporters.verify_inclusion, "nope", proof, root) == ("BAD_PROOF", "")


def test_inclusion_sizes_are_the_callers_never_the_answers() -> None:
    """Finding 1, for inclusion: the caller's tree size and leaf index are checked,
    whatever the answer states."""
    entry_id = LEDGER.entries[6]["id"]
    proof = LEDGER.inclusion(7, 20)
    assert refused(reporters.verify_inclusion, entry_id, proof, LEDGER.root(20),
                   leaf_index=7) == ("BAD_PROOF", "/leaf_index")
    # the proof of seq 7 in a tree of 16, offered against the tree of 20 the caller holds
    assert refused(reporters.verify_inclusion, entry_id, LEDGER.inclusion(7, 16),
                   LEDGER.root(20)) == ("BAD_PROOF", "/tree_size")
    # leaf 0 of 3 is computed exactly as in a tree of 4: the sizes must still be equal
    assert refused(reporters.verify_inclusion, LEDGER.entries[0]["id"],
                   {**LEDGER.inclusion(1, 3), "tree_size": 4}, LEDGER.root(3)) == \
        ("BAD_PROOF", "/tree_size")


def test_consistency_between_any_two_trees() -> None:
    for new in range(0, 41):
        for old in range(0, new + 1):
            proof = LEDGER.consistency(old, new)
            reporters.verify_consistency(proof, LEDGER.root(old), LEDGER.root(new))
    old_cp = reporters.verify_note(LEDGER.note(9, []), BUREAU_VKEY)
    new_cp = reporters.verify_note(LEDGER.note(33, []), BUREAU_VKEY)
    reporters.verify_consistency(LEDGER.consistency(9, 33), old_cp, new_cp)


def test_a_rewound_or_forked_tree_is_caught() -> None:
    forked = Ledger(40)  # another history under the same sizes
    proof = LEDGER.consistency(12, 30)
    assert refused(reporters.verify_consistency, proof, LEDGER.root(12),
                   forked.root(30)) == ("BAD_PROOF", "")
    assert refused(reporters.verify_consistency, forked.consistency(12, 30), LEDGER.root(12),
                   forked.root(30)) == ("BAD_PROOF", "")
    old_cp = reporters.verify_note(LEDGER.note(30, []), BUREAU_VKEY)
    new_cp = reporters.verify_note(LEDGER.note(12, []), BUREAU_VKEY)  # a smaller "newer" head
    assert refused(reporters.verify_consistency, {"from": 30, "to": 12, "hashes": []},
                   old_cp, new_cp)[0] == "BAD_PROOF"
    assert refused(reporters.verify_consistency, proof, old_cp, new_cp) == ("BAD_PROOF", "/from")


def test_the_issues_attack_a_proof_from_another_size_is_refused() -> None:
    """Finding 1: a bureau that showed size 10 serves a size-32 head whose root is
    H(0x01 ‖ R10 ‖ x) and the "proof" {"from": 16, "to": 32, "hashes": [x]}. Read with
    the proof's own ``from``, the RFC algorithm accepts it (shown first, with the pure
    check); with the size the caller kept, it is refused."""
    kept = LEDGER.root(10)
    x = merkle.leaf_hash(b"anything")
    forged_root = merkle.node_hash(bytes.fromhex(kept.root), x)
    forged = {"from": 16, "to": 32, "hashes": [x.hex()]}
    tlog_verify.verify_consistency(16, 32, bytes.fromhex(kept.root), forged_root, [x])
    head = reporters.TreeHead(32, forged_root.hex())
    assert refused(reporters.verify_consistency, forged, kept, head) == ("BAD_PROOF", "/from")
    assert refused(reporters.verify_consistency, {**forged, "from": 10}, kept, head)[0] == \
        "BAD_PROOF"
    assert refused(reporters.verify_consistency, {**LEDGER.consistency(10, 32), "to": 33},
                   kept, LEDGER.root(32)) == ("BAD_PROOF", "/to")


def test_the_evidence_root_of_an_agents_file() -> None:
    rng = random.Random(5)
    for _ in range(50):
        file = sorted(rng.sample(LEDGER.entries, rng.randrange(0, 20)), key=lambda e: e["seq"])
        seal = rng.randrange(0, 45)
        expected = ref.mth([bytes.fromhex(e["id"]) for e in file if e["seq"] <= seal]).hex()
        assert reporters.evidence_root(file, seal) == expected
        assert evidence.evidence_root([(e["seq"], e["id"]) for e in file], seal).hex() == expected
    assert reporters.evidence_root([], 10) == merkle.EMPTY_ROOT.hex()


def test_an_evidence_root_commits_to_every_entry_and_its_place() -> None:
    file = [LEDGER.entries[i] for i in (0, 3, 4, 9, 15)]
    root = reporters.evidence_root(file, 20)
    assert reporters.evidence_root(file[:-1], 20) != root   # one entry withheld
    # the last entry is seq 16: a seal at 15 leaves it out, one at 16 keeps it
    assert reporters.evidence_root(file, 15) == reporters.evidence_root(file[:-1], 20)
    assert reporters.evidence_root(file, 16) == root
    swapped = [file[0], {**file[1], "id": file[2]["id"]}, {**file[2], "id": file[1]["id"]},
               *file[3:]]
    assert reporters.evidence_root(swapped, 20) != root


def test_an_evidence_root_refuses_a_file_out_of_order() -> None:
    file = [LEDGER.entries[i] for i in (0, 3, 4)]
    assert refused(reporters.evidence_root, [file[1], file[0]], 10) == ("BROKEN_CHAIN", "/1/seq")
    assert refused(reporters.evidence_root, [file[0], file[0]], 10) == ("BROKEN_CHAIN", "/1/seq")
    assert refused(reporters.evidence_root, [file[0], {**file[1], "id": "AB" * 32}], 10) == \
        ("BAD_ENTRY_ID", "/1/id")
    with pytest.raises(ValueError):
        evidence.evidence_root([(2, "ab" * 32), (1, "ab" * 32)], 10)
