"""The report payload is spliced from canonical byte parts (bureau.views.parts); the
whole is held equal to ``reporters.wire.canonical_json`` of the reference payload by
tests/views/test_derive_equivalence.py, for every policy and rule. These hold the
parts the splice is made of equal to the encoder's bytes of the same values."""

from __future__ import annotations

import json

from bureau.views.parts import REPORT_KEYS, SPLICED, evidence_part, seal_part
from reporters import wire


def test_evidence_part_is_the_encoders_bytes() -> None:
    for root in (b"", bytes(32), bytes(range(32))):
        assert evidence_part(root) == wire.canonical_json({"root": root.hex()})


def test_seal_parts_are_the_encoders_bytes() -> None:
    for epoch, seq, head in ((0, 1, "00" * 32), (83_032, 2**40, "ab" * 32)):
        parts = seal_part(epoch, seq, head)
        assert parts == {"epoch": wire.canonical_json(epoch),
                         "ledger": wire.canonical_json({"seq": seq, "head": head})}


def test_spliced_keys_keep_the_encoders_order() -> None:
    """Splicing in REPORT_KEYS order is the encoder's member order (RFC 8785 sorts by
    UTF-16 code units; the keys are ASCII)."""
    doc = {k: i for i, k in enumerate(REPORT_KEYS)}
    assert list(json.loads(wire.canonical_json(doc))) == list(REPORT_KEYS)
    assert [k for k in REPORT_KEYS if k in SPLICED] == list(SPLICED)
