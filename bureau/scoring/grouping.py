"""Split whole-ledger evidence into per-agent evidence in one pass, O(total). Every
agent's part carries every reporter update: distrust is the ledger's.

The lead's epoch job does::

    scoring = EpochScoring(..., evaluator_table(evidence, policy))  # once, for the ledger
    for agent, mine in split_by_agent(evidence).items():
        build_report_payload(ReportInputs(agent, mine, scoring))

Agents with no evidence at all (enrolled, never observed) are not in the result: use
:data:`~bureau.scoring.inputs.EMPTY_EVIDENCE` for them.
"""

from __future__ import annotations

from collections import defaultdict

from bureau.scoring.inputs import (
    Attestation,
    Evidence,
    Exclusion,
    Fact,
    Probe,
    ValueJudgment,
)


class _Bucket:
    __slots__ = ("attestations", "exclusions", "facts", "probes", "value_judgments")

    def __init__(self) -> None:
        self.facts: list[Fact] = []
        self.probes: list[Probe] = []
        self.attestations: list[Attestation] = []
        self.value_judgments: list[ValueJudgment] = []
        self.exclusions: list[Exclusion] = []


def split_by_agent(evidence: Evidence) -> dict[str, Evidence]:
    """Evidence per subject, each list in seq order, with the exclusions that target
    that subject's entries. Keys are sorted, so iteration order is deterministic."""
    targets: defaultdict[str, list[Exclusion]] = defaultdict(list)
    for ex in evidence.exclusions:
        targets[ex.target].append(ex)
    buckets: defaultdict[str, _Bucket] = defaultdict(_Bucket)

    for f in sorted(evidence.facts, key=lambda e: e.seq):
        b = buckets[f.subject]
        b.facts.append(f)
        if f.entry_id in targets:
            b.exclusions.extend(targets[f.entry_id])
    for p in sorted(evidence.probes, key=lambda e: e.seq):
        b = buckets[p.subject]
        b.probes.append(p)
        if p.entry_id in targets:
            b.exclusions.extend(targets[p.entry_id])
    for a in sorted(evidence.attestations, key=lambda e: e.seq):
        b = buckets[a.subject]
        b.attestations.append(a)
        if a.entry_id in targets:
            b.exclusions.extend(targets[a.entry_id])
    for v in sorted(evidence.value_judgments, key=lambda e: e.seq):
        b = buckets[v.subject]
        b.value_judgments.append(v)
        if v.entry_id in targets:
            b.exclusions.extend(targets[v.entry_id])

    return {
        agent: Evidence(
            facts=tuple(b.facts),
            probes=tuple(b.probes),
            attestations=tuple(b.attestations),
            value_judgments=tuple(b.value_judgments),
            exclusions=tuple(sorted(b.exclusions, key=lambda e: (e.target, e.reason))),
            reporter_updates=evidence.reporter_updates,
        )
        for agent, b in sorted(buckets.items())
    }
