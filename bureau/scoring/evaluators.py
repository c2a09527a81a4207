"""Evaluators judged against ground truth, never against each other (SPEC §1.2, §7).

:func:`evaluator_table` is computed once for the whole ledger and shared by every
agent's report: an evaluator's weight and recentring offset come from all the
interactions it attested, whoever they were about. The incremental deriver keeps the
same sums (:class:`EvaluatorSums`, one :func:`contribution` per attested interaction),
split by shard and added up by the :class:`EvaluatorBook`; both turn sums into weights
with :func:`evaluator_stats`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from itertools import chain, repeat
from typing import Any

from bureau.scoring.inputs import Evidence
from bureau.scoring.policy import Policy
from bureau.scoring.truth import InteractionKey, excluded_ids, truth_index

#: What one standing attestation adds to its evaluator's record (see
#: :func:`contribution`): (outcome, value, ground truth or None).
Contribution = tuple[str, float, bool | None]


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

    # "One verdict per evaluator per interaction: the first stands."
    first: dict[tuple[str, InteractionKey], tuple[int, str, int]] = {}
    for a in evidence.attestations:
        if a.entry_id in excluded:
            continue
        key = (a.evaluator, (a.reporter, a.interaction, a.subject))
        prev = first.get(key)
        if prev is None or a.seq < prev[0]:
            first[key] = (a.seq, a.outcome, a.corrections)

    sums: dict[str, EvaluatorSums] = {}
    for (evaluator, ikey), (_, outcome, corrections) in first.items():
        c = contribution(outcome, corrections, truth.get(ikey), policy)
        if c is None:
            continue  # DECLINED takes no part
        acc = sums.get(evaluator)
        if acc is None:
            acc = sums[evaluator] = EvaluatorSums()
        acc.apply(c, ikey[2], +1, threshold)
    return {e: evaluator_stats(e, record_of([acc.part()]), policy)
            for e, acc in sorted(sums.items())}


def contribution(outcome: str, corrections: int, truth: bool | None,
                 policy: Policy) -> Contribution | None:
    """What an evaluator's standing attestation adds to its record: (outcome, value,
    the interaction's ground truth or None). An unscored outcome (``DECLINED``) adds
    nothing; without ground truth it counts towards attestations and subjects only —
    dropped from the sample, not marked wrong."""
    if policy.is_unscored(outcome):
        return None
    return outcome, policy.outcome_value(outcome, corrections), truth


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


# --------------------------------------------------------------------------- sums


@dataclass(frozen=True, slots=True)
class EvaluatorPart:
    """One shard's sums for one evaluator, as handed to the :class:`EvaluatorBook`.
    A subject belongs to one shard only, so distinct subjects add up across shards."""

    attestations: int
    subjects: int
    outcomes: frozenset[str]
    positives: int
    negatives: int
    tp: int
    tn: int
    errors: tuple[tuple[float, int], ...]  # (value - truth, how many times)


@dataclass
class EvaluatorSums:
    """One evaluator's record as counters whose multiset semantics let a contribution
    be taken out again (the incremental deriver swaps contributions as attestations,
    ground truth and exclusions arrive; the whole-ledger table only adds)."""

    subjects: Counter[str] = field(default_factory=Counter)
    outcomes: Counter[str] = field(default_factory=Counter)
    errors: Counter[float] = field(default_factory=Counter)
    attestations: int = 0
    positives: int = 0
    negatives: int = 0
    tp: int = 0
    tn: int = 0

    def apply(self, c: Contribution, subject: str, sign: int, threshold: float) -> None:
        """Add (``sign`` 1) or take out (-1) one contribution about ``subject``."""
        outcome, value, truth = c
        self.attestations += sign
        _bump(self.subjects, subject, sign)
        _bump(self.outcomes, outcome, sign)
        if truth is None:
            return
        called_pass = value >= threshold
        if truth:
            self.positives += sign
            self.tp += sign * called_pass
        else:
            self.negatives += sign
            self.tn += sign * (not called_pass)
        _bump(self.errors, value - (1.0 if truth else 0.0), sign)

    def part(self) -> EvaluatorPart:
        return EvaluatorPart(self.attestations, len(self.subjects),
                             frozenset(self.outcomes), self.positives, self.negatives,
                             self.tp, self.tn, tuple(self.errors.items()))


def _bump(counter: Counter[Any], key: Any, sign: int) -> None:
    """Add ``sign`` to a count, dropping it at zero (so ``len`` counts what is there)."""
    n = counter[key] + sign
    if n:
        counter[key] = n
    else:
        del counter[key]


def record_of(parts: list[EvaluatorPart]) -> EvaluatorRecord:
    """The whole record of one evaluator from the parts of every shard."""
    return EvaluatorRecord(
        attestations=sum(p.attestations for p in parts),
        subjects=sum(p.subjects for p in parts),
        outcomes=set().union(*(p.outcomes for p in parts)),
        positives=sum(p.positives for p in parts), negatives=sum(p.negatives for p in parts),
        tp=sum(p.tp for p in parts), tn=sum(p.tn for p in parts),
        errors=list(chain.from_iterable(repeat(e, n) for p in parts for e, n in p.errors)))


class EvaluatorBook:
    """Evaluator records summed over the shards of the agents, and the weights they give.

    An evaluator's record is a sum over the interactions it attested, and every
    interaction belongs to one agent, so derivers that each hold some of the agents
    (in this process or in others, see :mod:`bureau.views.shards`) each keep their part
    of the sums; the book adds the parts up. Only the parts of evaluators a shard
    reports as touched are recomputed.
    """

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self._parts: dict[int, dict[str, EvaluatorPart]] = {}
        self.stats: dict[str, EvaluatorStats] = {}

    def update(self, reports: Iterable[tuple[int, dict[str, EvaluatorPart | None]]],
               ) -> dict[str, tuple[float, float] | None]:
        """Take (shard, its sums for the evaluators it touched) and return every
        evaluator whose (weight, offset) changed, with the new value (None: the evaluator
        has no record any more, so it weighs the policy's default)."""
        touched: set[str] = set()
        for shard, sums in reports:
            mine = self._parts.setdefault(shard, {})
            for evaluator, part in sums.items():
                if part is None:
                    mine.pop(evaluator, None)
                else:
                    mine[evaluator] = part
                touched.add(evaluator)
        changed: dict[str, tuple[float, float] | None] = {}
        for evaluator in sorted(touched):
            parts = [p[evaluator] for p in self._parts.values() if evaluator in p]
            before = self.stats.get(evaluator)
            if not parts:
                self.stats.pop(evaluator, None)
                after = None
            else:
                after = self.stats[evaluator] = evaluator_stats(evaluator, record_of(parts),
                                                                self.policy)
            weighs = None if after is None else (after.weight, after.offset)
            if (None if before is None else (before.weight, before.offset)) != weighs:
                changed[evaluator] = weighs
        return changed
