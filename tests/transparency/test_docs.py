"""docs/transparency.md against the code: its worked example and its list of codes."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import nacl.signing

from reporters.tlog import merkle, proofs
from reporters.tlog.checkpoint import default_origin, log_signer, open_checkpoint
from reporters.tlog.errors import TLOG_CODES
from reporters.tlog.note import Verifier

DOC = (Path(__file__).resolve().parents[2] / "docs" / "transparency.md").read_text()


def _block_after(marker: str) -> str:
    start = DOC.index(marker)
    match = re.search(r"```\n(.*?)```", DOC[start:], flags=re.S)
    assert match is not None, marker
    return match.group(1)


def _example_tree() -> dict[merkle.Node, bytes]:
    ids = [f"{i:064x}" for i in (1, 2, 3)]
    _, nodes = merkle.Frontier.empty().extend(merkle.entry_leaf_hash(i) for i in ids)
    return {(level, index): h for level, index, h in nodes}


def test_the_worked_example_nodes_root_and_proofs() -> None:
    nodes = _example_tree()
    rows = dict(re.findall(r"^\| \((\d+, \d+)\) \| `([0-9a-f]{64})` \|$", DOC, flags=re.M))
    assert rows == {f"{level}, {index}": h.hex() for (level, index), h in nodes.items()}
    root = proofs.root_at(3, nodes.__getitem__)
    assert f"`{root.hex()}`" in DOC
    assert root == merkle.node_hash(nodes[(1, 0)], nodes[(0, 2)])
    assert proofs.inclusion_proof(0, 3, nodes.__getitem__) == [nodes[(0, 1)], nodes[(0, 2)]]
    assert proofs.consistency_proof(2, 3, nodes.__getitem__) == [nodes[(0, 2)]]


def test_the_worked_example_note_verifies() -> None:
    bureau_vkey, witness_vkey = _block_after("The bureau's vkey and the witness's").split()
    key = nacl.signing.SigningKey(bytes(32))
    origin = default_origin(bytes(key.verify_key))
    assert bureau_vkey == log_signer(origin, key).verifier.vkey
    note = _block_after("The checkpoint at size 3")
    verified = open_checkpoint(note, Verifier.from_vkey(bureau_vkey),
                               witnesses=[Verifier.from_vkey(witness_vkey)], threshold=1)
    assert (verified.origin, verified.size) == (origin, 3)
    assert verified.root == proofs.root_at(3, _example_tree().__getitem__)
    (cosignature,) = verified.cosignatures
    assert dt.datetime.fromtimestamp(cosignature.timestamp, dt.UTC) == dt.datetime(
        2026, 1, 1, tzinfo=dt.UTC)


def test_every_code_is_documented() -> None:
    section = DOC[DOC.index("## Errors"):]
    assert set(re.findall(r"^\| `([A-Z_]+)` \|", section, flags=re.M)) == TLOG_CODES
