"""Small builders of scoring inputs shared by the scoring tests."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from bureau.scoring.inputs import Attestation, Fact

A = "ed25519:agent-a"
B = "ed25519:agent-b"
REP = "ed25519:reporter"
HEAD = "ab" * 32


def fact(seq: int, subject: str = A, **kw: Any) -> Fact:
    base = Fact(
        seq=seq,
        entry_id=f"f{seq}",
        reporter=REP,
        interaction=f"i{seq}",
        subject=subject,
        caller=f"ed25519:caller{seq % 3}",
    )
    return replace(base, **kw)


def att(seq: int, of: int, outcome: str, subject: str = A, corrections: int = 0) -> Attestation:
    return Attestation(
        seq=seq,
        entry_id=f"a{seq}",
        evaluator=f"ed25519:caller{of % 3}",
        reporter=REP,
        interaction=f"i{of}",
        subject=subject,
        outcome=outcome,
        corrections=corrections,
    )
