"""How an agent's score was made, interaction by interaction (SPEC §9 ``explain``).

Computed on demand by the scoring library's reference path over the ledger up to the
epoch's seal — the same definition the stored reports are tested against
(``tests/views/test_derive_equivalence.py``), so an explanation always adds up to the
report of the same epoch. Evaluators appear only as per-report pseudonyms.

The cost grows with the ledger (every evaluator's record is needed to weigh one agent's
verdicts); see docs/reading.md.
"""

from __future__ import annotations

from typing import Any

from bureau.evidence.entries import load_evidence
from bureau.evidence.policies import policy_of_epoch
from bureau.scoring import (
    EpochScoring,
    Evidence,
    ReportInputs,
    build_explain_payload,
    evaluator_table,
    split_by_agent,
)
from bureau.storage import db, reports


async def explain(conn: db.Connection, agent: str, epoch: int | None
                  ) -> dict[str, Any] | None:
    """The explanation of ``agent``'s report at ``epoch`` (default: the latest epoch
    with complete reports), or None when there is no such report."""
    seal = await reports.reported_seal(conn, agent, epoch)
    if seal is None:
        return None
    ledger = await load_evidence(conn, seal.last_seq)
    policy, digest = await policy_of_epoch(conn, seal.epoch, seal.last_seq)
    evidence = ledger.evidence()
    scoring = EpochScoring(seal.epoch, seal.last_seq, seal.head, policy, digest,
                           evaluator_table(evidence, policy))
    mine = split_by_agent(evidence).get(
        agent, Evidence(reporter_updates=evidence.reporter_updates))
    body = build_explain_payload(ReportInputs(agent, mine, scoring))
    body["name"] = ledger.names.get(agent)
    return body
