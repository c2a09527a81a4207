"""Scoring: pure functions from evidence and a policy to reports (SPEC §7, §8).

No I/O, no clock, no randomness. Typical use, once per sealed epoch::

    policy = policy_v1()
    scoring = EpochScoring(epoch, seq, head, policy, policy_hash(),
                           evaluator_table(evidence, policy))
    for agent, mine in split_by_agent(evidence).items():
        payload = build_report_payload(ReportInputs(agent, mine, scoring, name=name))
"""

from bureau.scoring.evaluators import EvaluatorStats, evaluator_table, evaluator_weight
from bureau.scoring.grouping import split_by_agent
from bureau.scoring.inputs import (
    EMPTY_EVIDENCE,
    AgentEvidence,
    Attestation,
    Engagement,
    Evidence,
    Exclusion,
    Fact,
    Probe,
    Promise,
    ValueJudgment,
)
from bureau.scoring.outcomes import Resolution, resolve_all
from bureau.scoring.policy import (
    POLICY_V1_DOCUMENT,
    Policy,
    policy_bytes,
    policy_document,
    policy_hash,
    policy_v1,
)
from bureau.scoring.report import (
    AgentScore,
    EpochScoring,
    ReportInputs,
    build_explain_payload,
    build_report_payload,
    explain_rows,
    score_agent,
)
from bureau.scoring.score import Score, score_terms, wilson_interval

__all__ = [
    "EMPTY_EVIDENCE",
    "POLICY_V1_DOCUMENT",
    "AgentEvidence",
    "AgentScore",
    "Attestation",
    "Engagement",
    "EpochScoring",
    "EvaluatorStats",
    "Evidence",
    "Exclusion",
    "Fact",
    "Policy",
    "Probe",
    "Promise",
    "ReportInputs",
    "Resolution",
    "Score",
    "ValueJudgment",
    "build_explain_payload",
    "build_report_payload",
    "evaluator_table",
    "evaluator_weight",
    "explain_rows",
    "policy_bytes",
    "policy_document",
    "policy_hash",
    "policy_v1",
    "resolve_all",
    "score_agent",
    "score_terms",
    "split_by_agent",
    "wilson_interval",
]
