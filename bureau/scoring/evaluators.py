"""Evaluators judged against ground truth, never against each other (SPEC §1.2, §7).

:func:`evaluator_table` is computed once for the whole ledger and shared by every
agent's report: an evaluator's weight and recentring offset come from all the
interactions it attested, whoever they were about.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from bureau.scoring.inputs import Evidence
from bureau.scoring.policy import Policy
from bureau.scoring.truth import InteractionKey, excluded_ids, truth_index


@dataclass(frozen=True, slots=True)
class EvaluatorStats:
    """One evaluator's record. Internal: reports never name an evaluator."""

    evaluator: str
    attestations: int  # non-excluded, non-DECLINED attestations, with or without truth
    subjects: int  # distinct subjects among those
    n: int  # attestations with ground truth: the sample
    positives: int  # P: sampled interactions whose truth passed
    negatives: int  # N: ... whose truth failed
    tp: int
    tn: int
    tpr: float  # (tp + 1) / (P + 2)
    tnr: float  # (tn + 1) / (N + 2)
    informedness: float  # J = clamp(TPR + TNR - 1, 0, 1)
    accuracy: float | None  # (tp + tn) / n; None when n = 0
    mean_error: float | None  # d = mean(value - truth); None when n = 0
    offset: float  # recentring offset n*d / (n + k)
    constant: bool  # the constant-rater rule applied
    weight: float  # w_e


@dataclass(slots=True)
class EvaluatorRecord:
    """What the evaluator table adds up per evaluator; the incremental report builder
    keeps these sums too and turns them into weights with :func:`evaluator_stats`."""

    attestations: int = 0
    subjects: int = 0  # how many distinct subjects
    outcomes: set[str] = field(default_factory=set)
    positives: int = 0
    negatives: int = 0
    tp: int = 0
    tn: int = 0
    errors: list[float] = field(default_factory=list)


def evaluator_table(evidence: Evidence, policy: Policy) -> dict[str, EvaluatorStats]:
    """Stats for every evaluator that gave an attestation, keyed by its key id.

    One pass over the attestations after one pass over facts and probes: O(total).
    Evaluators that are absent (for example buyers who only gave value judgments) weigh
    ``policy.evaluators.default_weight`` with no offset.
    """
    excluded = excluded_ids(evidence.exclusions)
    truth = truth_index(evidence.facts, evidence.probes, excluded)
    threshold = policy.evaluators.polarity_threshold
    value_of = policy.outcome_value
    unscored = frozenset(policy.outcomes.unscored)

    # "One verdict per evaluator per interaction: the first stands."
    first: dict[tuple[str, InteractionKey], tuple[int, str, int]] = {}
    for a in evidence.attestations:
        if a.entry_id in excluded:
            continue
        key = (a.evaluator, (a.reporter, a.interaction, a.subject))
        prev = first.get(key)
        if prev is None or a.seq < prev[0]:
            first[key] = (a.seq, a.outcome, a.corrections)

    accs: dict[str, EvaluatorRecord] = {}
    subjects: dict[str, set[str]] = {}
    for (evaluator, ikey), (_, outcome, corrections) in first.items():
        if outcome in unscored:
            continue  # DECLINED takes no part
        acc = accs.get(evaluator)
        if acc is None:
            acc = accs[evaluator] = EvaluatorRecord()
        acc.attestations += 1
        subjects.setdefault(evaluator, set()).add(ikey[2])
        acc.outcomes.add(outcome)
        passed = truth.get(ikey)
        if passed is None:
            continue  # no ground truth: dropped from the sample, not marked wrong
        value = value_of(outcome, corrections)
        called_pass = value >= threshold
        if passed:
            acc.positives += 1
            acc.tp += called_pass
        else:
            acc.negatives += 1
            acc.tn += not called_pass
        acc.errors.append(value - (1.0 if passed else 0.0))

    for evaluator, acc in accs.items():
        acc.subjects = len(subjects[evaluator])
    return {e: evaluator_stats(e, acc, policy) for e, acc in sorted(accs.items())}


def evaluator_stats(evaluator: str, acc: EvaluatorRecord, policy: Policy) -> EvaluatorStats:
    """An evaluator's weight and recentring offset from its sums (SPEC §7)."""
    rules = policy.evaluators
    k = rules.prior_samples
    n = len(acc.errors)
    tpr = (acc.tp + 1) / (acc.positives + 2)
    tnr = (acc.tn + 1) / (acc.negatives + 2)
    j = min(1.0, max(0.0, tpr + tnr - 1))
    d = math.fsum(acc.errors) / n if n else None
    if n + k > 0:
        weight = (n * j + k * rules.prior_weight) / (n + k)
        offset = n * d / (n + k) if d is not None else 0.0
    else:
        weight, offset = rules.default_weight, 0.0
    cr = rules.constant_rater
    constant = (
        acc.attestations >= cr.min_attestations
        and acc.subjects >= cr.min_subjects
        and len(acc.outcomes) == 1
    )
    return EvaluatorStats(
        evaluator=evaluator,
        attestations=acc.attestations,
        subjects=acc.subjects,
        n=n,
        positives=acc.positives,
        negatives=acc.negatives,
        tp=acc.tp,
        tn=acc.tn,
        tpr=tpr,
        tnr=tnr,
        informedness=j,
        accuracy=(acc.tp + acc.tn) / n if n else None,
        mean_error=d,
        offset=offset,
        constant=constant,
        weight=0.0 if constant else weight,
    )


def evaluator_weight(
    evaluators: Mapping[str, EvaluatorStats], evaluator: str, policy: Policy
) -> float:
    """``w_e`` for any key: its record's weight, or the default for a key with none."""
    stats = evaluators.get(evaluator)
    return stats.weight if stats is not None else policy.evaluators.default_weight
