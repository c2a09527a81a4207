"""An agent's report payload (SPEC §8) and its explanation (SPEC §9 ``explain``).

Both are pure functions of the agent's evidence, the policy and the shared evaluator
table. Same inputs, in any order, give the same dict and so the same canonical bytes:
entries are re-ordered by ``seq`` and sums are exact (:func:`math.fsum`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from itertools import chain, repeat
from typing import Any

from bureau.scoring.evaluators import EvaluatorStats, Weighing, default_weighing
from bureau.scoring.inputs import EXCLUSION_REASONS, REPORTER_ROW_MIN, Evidence, Fact, Probe
from bureau.scoring.outcomes import RULE_NAMES, Resolution, resolve_all
from bureau.scoring.policy import Policy
from bureau.scoring.score import SCORE_REASON_TEXT, Score, Term, cap_terms, score_terms
from bureau.scoring.truth import set_aside

#: The rules whose resolutions a ``reporters`` row scores: reporter evidence that
#: carries a value (rule 5 never does).
REPORTER_RULES = (1, 2, 6, 7)


@dataclass(frozen=True, slots=True)
class AgentScore:
    """The intermediate result that both the report and the explanation are made of."""

    agent: str
    resolutions: tuple[Resolution, ...]
    excluded: tuple[tuple[int, str, str, str], ...]  # (seq, entry id, kind, reason)
    score: dict[str, Any] | None
    score_reason: str | None
    value_judgment_share: float
    ground_truth_share: float = 0.0
    provisional_share: float = 0.0
    #: each resolution's weight after settling (SPEC §7.1 c-d), aligned with resolutions
    settled: tuple[float, ...] = ()


# --------------------------------------------------------------------------- maths


def nearest_rank(sorted_values: Sequence[int], percentile: float) -> int | None:
    """Nearest-rank percentile: the ``ceil(P/100 · N)``-th smallest value (1-based)."""
    if not sorted_values:
        return None
    rank = max(1, math.ceil(percentile / 100 * len(sorted_values)))
    return sorted_values[rank - 1]


# --------------------------------------------------------------------------- scoring


def own_evidence(evidence: Evidence, agent: str) -> Evidence:
    """``evidence`` restricted to entries about ``agent`` (cheap when already split)."""
    return Evidence(
        facts=tuple(f for f in evidence.facts if f.subject == agent),
        probes=tuple(p for p in evidence.probes if p.subject == agent),
        attestations=tuple(a for a in evidence.attestations if a.subject == agent),
        value_judgments=tuple(v for v in evidence.value_judgments if v.subject == agent),
        exclusions=evidence.exclusions,
        reporter_updates=evidence.reporter_updates,
    )


def resolution_term(r: Resolution) -> Term:
    """A scored resolution as the score's term (one unit)."""
    return (r.weight, r.value if r.value is not None else 0.0, r.rule, 1, r.evaluator,
            r.provisional)


def score_agent(
    agent: str,
    evidence: Evidence,
    policy: Policy,
    evaluators: Mapping[str, EvaluatorStats],
) -> AgentScore:
    """Resolve and weigh every interaction about ``agent``."""
    mine = own_evidence(evidence, agent)
    excluded = set_aside(mine)
    resolutions = tuple(resolve_all(mine, policy, evaluators, excluded))

    terms = [resolution_term(r) for r in resolutions if r.scored]
    default = default_weighing(policy)

    def weighing(evaluator: str) -> Weighing:
        stats = evaluators.get(evaluator)
        return default if stats is None else stats.weighing

    scored: Score = score_terms(terms, policy, weighing)
    weights = iter(t[0] for t in cap_terms(terms, policy, weighing))
    settled = tuple(next(weights) if r.scored else 0.0 for r in resolutions)

    kinds: dict[str, tuple[int, str]] = {}
    for group, kind in (
        (mine.facts, "fact"),
        (mine.probes, "probe"),
        (mine.attestations, "attestation"),
        (mine.value_judgments, "value_judgment"),
    ):
        for e in group:
            if e.entry_id in excluded:
                kinds[e.entry_id] = (e.seq, kind)
    excl = tuple(sorted((s, eid, kind, excluded[eid]) for eid, (s, kind) in kinds.items()))

    return AgentScore(
        agent=agent,
        resolutions=resolutions,
        excluded=excl,
        score=scored.score,
        score_reason=scored.reason,
        value_judgment_share=scored.value_judgment_share,
        ground_truth_share=scored.ground_truth_share,
        provisional_share=scored.provisional_share,
        settled=settled,
    )


def _reliability(
    facts: Sequence[Fact], excluded: AbstractSet[str], policy: Policy
) -> dict[str, Any]:
    """Over every non-excluded fact about the agent, engagement steps included."""
    observed = answered = wf_seen = wf_ok = 0
    latencies: list[int] = []
    promises: dict[str, list[int]] = {}
    for f in facts:
        if f.entry_id in excluded:
            continue
        observed += 1
        if f.answered:
            answered += 1
            if f.latency_ms is not None:
                latencies.append(f.latency_ms)
        if f.well_formed is not None:
            wf_seen += 1
            wf_ok += f.well_formed
        for pr in f.promises:
            counts = promises.setdefault(pr.promise, [0, 0])
            counts[0 if pr.kept else 1] += 1
    latencies.sort()
    rnd = policy.round
    return {
        "observed": observed,
        "answer_rate": rnd(answered / observed) if observed else None,
        "well_formed_rate": rnd(wf_ok / wf_seen) if wf_seen else None,
        "latency_ms": {"p50": nearest_rank(latencies, 50), "p95": nearest_rank(latencies, 95)},
        "promises": {k: {"kept": v[0], "broken": v[1]} for k, v in sorted(promises.items())},
    }


# --------------------------------------------------------------------------- payloads


@dataclass(frozen=True, slots=True)
class EpochScoring:
    """What every report of one sealed epoch shares: the seal (``epoch``; the ledger's
    ``seq`` and ``head`` there), the policy that scores the epoch and its hash, and the
    evaluator table over the whole ledger up to the seal
    (:func:`~bureau.scoring.evaluators.evaluator_table`)."""

    epoch: int
    seq: int
    head: str
    policy: Policy
    policy_hash: str
    evaluators: Mapping[str, EvaluatorStats]


@dataclass(frozen=True, slots=True)
class ReportInputs:
    """Everything one agent's report, and its explanation, are a function of:
    ``evidence`` about the agent (its part of
    :func:`~bureau.scoring.grouping.split_by_agent`, or the whole ledger's: only its own
    entries are read), the epoch's scoring, and the name and links in force at the seal
    (SPEC §3, §8 r3), which the explanation leaves out."""

    agent: str
    evidence: Evidence
    scoring: EpochScoring
    name: str | None = None
    links: Sequence[dict[str, str]] = ()


def build_report_payload(inputs: ReportInputs) -> dict[str, Any]:
    """The SPEC §8 report payload of ``inputs.agent``: exactly its keys, nothing else.

    It names no caller and no evaluator. When ``score`` is null, the reason is in the
    explanation (:func:`build_explain_payload`, ``score_reason``). ``inputs.links`` are
    the agent's links in force at the seal (SPEC §3, §8 r3).
    """
    agent, evidence, at = inputs.agent, inputs.evidence, inputs.scoring
    policy = at.policy
    result = score_agent(agent, evidence, policy, at.evaluators)
    outcomes, unscored = outcome_counts(result.resolutions, policy)
    excluded_counts = dict.fromkeys(EXCLUSION_REASONS, 0)
    for _, _, _, reason in result.excluded:
        excluded_counts[reason] += 1
    probes = {"passed": 0, "failed": 0}
    ex_ids = {eid for _, eid, _, _ in result.excluded}
    counted_probes = [p for p in evidence.probes
                      if p.subject == agent and p.entry_id not in ex_ids]
    for p in counted_probes:
        probes["passed" if p.passed else "failed"] += 1
    facts = [f for f in evidence.facts if f.subject == agent]
    rnd = policy.round
    return {
        "agent": agent,
        "name": inputs.name,
        "links": list(inputs.links),
        "epoch": at.epoch,
        "ledger": {"seq": at.seq, "head": at.head},
        "policy": at.policy_hash,
        "score": dict(result.score) if result.score is not None else None,
        "outcomes": outcomes,
        "value_judgment_share": rnd(result.value_judgment_share),
        "ground_truth_share": rnd(result.ground_truth_share),
        "provisional_share": rnd(result.provisional_share),
        "reliability": _reliability(facts, ex_ids, policy),
        "probes": probes,
        "excluded": excluded_counts,
        "unscored": unscored,
        "first_seen_epoch": first_seen_epoch(
            [f for f in facts if f.entry_id not in ex_ids], counted_probes),
        "reporters": reporter_rows(result.resolutions, policy),
    }


def outcome_counts(resolutions: Sequence[Resolution], policy: Policy
                   ) -> tuple[dict[str, int], dict[str, int]]:
    """The report's ``outcomes`` and ``unscored``: a verdict of weight 0 is listed under
    ``unscored`` by its code (SPEC §8 r2) — under v2 it resolved nothing and is among a
    resolution's ``passed_over``; under v1 it still decided its unit, at weight 0."""
    outcomes = dict.fromkeys(policy.scored_codes, 0)
    unscored = dict.fromkeys(policy.outcomes.unscored, 0)
    for r in resolutions:
        for code in r.passed_over:
            unscored[code] = unscored.get(code, 0) + 1
        if r.code is None:
            continue
        table = outcomes if r.scored and r.weight > 0 else unscored
        table[r.code] = table.get(r.code, 0) + 1
    return outcomes, unscored


def first_seen_epoch(facts: Sequence[Fact], probes: Sequence[Probe]) -> int | None:
    """The epoch of the earliest counted fact or probe about the agent (SPEC §8 r2);
    enrolling does not count, nor does evidence that counts nowhere."""
    epochs = [x.epoch for x in facts] + [x.epoch for x in probes]
    return min(epochs) if epochs else None


def reporter_rows(resolutions: Sequence[Resolution], policy: Policy) -> list[dict[str, Any]]:
    """The report's ``reporters`` (SPEC §8 r2): per reporter, its counted interactions
    about the agent (units: a fact, a probe or both; an engagement once), how many of
    them reporter evidence scored (rules 1, 2, 6, 7) and the unweighted mean of those
    values. Reporters with fewer than :data:`REPORTER_ROW_MIN` interactions share one
    row with ``"reporter": null``, last; there is no such row when none has fewer."""
    tally: dict[str, tuple[int, list[tuple[float, int]]]] = {}
    for r in resolutions:
        count, values = tally.get(r.unit.reporter, (0, []))
        if r.rule in REPORTER_RULES and r.scored and r.value is not None:
            values.append((r.value, 1))
        tally[r.unit.reporter] = (count + 1, values)
    return rows_of(tally, policy)


def rows_of(tally: Mapping[str, tuple[int, list[tuple[float, int]]]], policy: Policy
            ) -> list[dict[str, Any]]:
    """The ``reporters`` rows from (interactions, scored (value, how many)) per reporter."""
    rows: list[dict[str, Any]] = []
    rest_count, rest_values = 0, []
    for reporter in sorted(tally):
        count, values = tally[reporter]
        if count >= REPORTER_ROW_MIN:
            rows.append(_row(reporter, count, values, policy))
        else:
            rest_count += count
            rest_values.extend(values)
    if rest_count:
        rows.append(_row(None, rest_count, rest_values, policy))
    return rows


def _row(reporter: str | None, count: int, values: list[tuple[float, int]], policy: Policy
         ) -> dict[str, Any]:
    scored = sum(n for _, n in values)
    mean = policy.round(math.fsum(chain.from_iterable(repeat(v, n) for v, n in values))
                        / scored) if scored else None
    return {"reporter": reporter, "interactions": count, "scored": scored,
            "mean_value": mean}


def explain_rows(result: AgentScore, policy: Policy) -> list[dict[str, Any]]:
    """Interaction by interaction: code, value, weight, recentring; evaluators appear
    as per-report pseudonyms (``evaluator-1``, ... by first appearance in seq order)."""
    used = sorted(
        (_verdict_seq(r), r.evaluator) for r in result.resolutions if r.evaluator is not None
    )
    names: dict[str, str] = {}
    for _, key in used:
        names.setdefault(key, f"evaluator-{len(names) + 1}")
    rnd = policy.round
    rows: list[dict[str, Any]] = []
    settled = result.settled or tuple(r.weight for r in result.resolutions)
    for r, weight in zip(result.resolutions, settled, strict=True):
        u = r.unit
        rows.append(
            {
                "seq": u.seq,
                "entry": u.entry_id,
                "reporter": u.reporter,
                "interaction": u.interaction,
                "engagement": u.engagement,
                "rule": r.rule,
                "rule_name": RULE_NAMES[r.rule],
                "source": r.source,
                "outcome": r.code,
                "scored": r.scored,
                "value": rnd(r.value) if r.value is not None else None,
                "raw_value": rnd(r.raw_value) if r.raw_value is not None else None,
                "weight": rnd(weight),
                "verdict_weight": rnd(r.weight),
                "offset": rnd(r.offset),
                "evaluator": names[r.evaluator] if r.evaluator is not None else None,
                "provisional": r.provisional,
                "passed_over": list(r.passed_over),
            }
        )
    return rows


def _verdict_seq(r: Resolution) -> int:
    if r.rule == 3 and r.unit.attestation is not None:
        return r.unit.attestation.seq
    if r.rule == 4 and r.unit.value_judgment is not None:
        return r.unit.value_judgment.seq
    return r.unit.seq


def build_explain_payload(inputs: ReportInputs) -> dict[str, Any]:
    """The body of ``GET /v1/agents/{agent}/explain``: how the score was made (the
    agent's name and links are the report's, not the explanation's)."""
    at = inputs.scoring
    policy = at.policy
    result = score_agent(inputs.agent, inputs.evidence, policy, at.evaluators)
    return {
        "agent": inputs.agent,
        "epoch": at.epoch,
        "ledger": {"seq": at.seq, "head": at.head},
        "policy": at.policy_hash,
        "score": dict(result.score) if result.score is not None else None,
        "score_reason": result.score_reason,
        "score_reason_text": SCORE_REASON_TEXT.get(result.score_reason or ""),
        "value_judgment_share": policy.round(result.value_judgment_share),
        "ground_truth_share": policy.round(result.ground_truth_share),
        "provisional_share": policy.round(result.provisional_share),
        "interactions": explain_rows(result, policy),
        "excluded": [
            {"seq": s, "entry": eid, "kind": kind, "reason": reason}
            for s, eid, kind, reason in result.excluded
        ],
    }
