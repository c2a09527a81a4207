"""Evaluators judged against ground truth, never against each other (SPEC §1.2, §7).

:func:`evaluator_table` is computed once for the whole ledger and shared by every
agent's report: an evaluator's weight and recentring offset come from all the
interactions it attested, whoever they were about. The incremental deriver keeps the
same sums (:class:`EvaluatorSums`, one :func:`contribution` per attested interaction),
split by shard and added up by :mod:`bureau.scoring.book`; both turn sums into weights
with :func:`evaluator_stats`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from itertools import chain, repeat
from typing import Any, NamedTuple, TypeVar

from bureau.scoring.inputs import Attestation, Evidence, ValueJudgment
from bureau.scoring.policy import PolarityConstantRater, Policy
from bureau.scoring.rates import (
    NOTHING_RATED,
    Rated,
    RatedSums,
    caller_rates,
    established,
    prior_rates,
    rated_truth,
)
from bureau.scoring.truth import claims_index, graded_truth, set_aside, truth_index

#: A standing verdict as graded (see :func:`contribution`): (outcome, value, the ground
#: truth it is graded against or None).
Graded = tuple[str, float, bool | None]
#: What one standing verdict adds to its evaluator's record (see
#: :func:`rated_contribution`): the graded verdict and, under v4, what rates it
#: (:func:`bureau.scoring.rates.rated_truth`) or None.
Contribution = tuple[str, float, bool | None, bool | None]


class Weighing(NamedTuple):
    """What weighs an evaluator's verdicts. Under v1 both offsets are the one offset and
    nobody is provisional. Under v4 no verdict is recentred: its rates and its voice about
    one subject (:mod:`bureau.scoring.rates`) weigh it in the posterior."""

    weight: float  # w_e
    offset_positive: float  # the recentring offset of its positive verdicts
    offset_negative: float  # of its negative ones
    provisional: bool
    rate_positive: float = 0.0  # v4: P(positive verdict | right call)
    rate_negative: float = 0.0  # v4: P(positive verdict | wrong call)
    voice: float = 0.0  # v4: how many verdicts its verdicts about one subject count as


@dataclass(frozen=True, slots=True)
class EvaluatorStats:
    """One evaluator's record. Internal: reports never name an evaluator."""

    evaluator: str
    verdicts: int  # counted verdicts (v1: attestations; v2: and value judgments), DECLINED aside
    subjects: int  # distinct subjects among those
    n: int  # verdicts graded against ground truth: the sample
    positives: int  # P: sampled interactions whose truth passed
    negatives: int  # N: ... whose truth failed
    tp: int
    tn: int
    tpr: float  # (tp + 1) / (P + 2)
    tnr: float  # (tn + 1) / (N + 2)
    informedness: float  # J = clamp(TPR + TNR - 1, 0, 1)
    accuracy: float | None  # (tp + tn) / n; None when n = 0
    mean_error: float | None  # d = mean(value - truth); None when n = 0
    offset: float  # recentring offset n*d / (n + k) (v1)
    offset_positive: float  # v2: of positive verdicts; v1: ``offset``
    offset_negative: float  # v2: of negative verdicts; v1: ``offset``
    constant: bool  # the constant-rater rule applied
    uninformative: bool  # v2: J = 0 over enough graded verdicts
    provisional: bool  # v2: fewer graded verdicts than N_cal; v4: not calibrated
    weight: float  # w_e
    rated: int = 0  # v4: verdicts rated (probes, checks, admissions) on established subjects
    rated_subjects: int = 0  # v4: the distinct established subjects among them
    rate_positive: float = 0.0  # v4: the alpha it is weighed at
    rate_negative: float = 0.0  # v4: the beta
    voice: float = 0.0  # v4: its voice about one subject, in verdicts

    @property
    def weighing(self) -> Weighing:
        return Weighing(weight=self.weight, offset_positive=self.offset_positive,
                        offset_negative=self.offset_negative, provisional=self.provisional,
                        rate_positive=self.rate_positive, rate_negative=self.rate_negative,
                        voice=self.voice)


@dataclass(slots=True)
class EvaluatorRecord:
    """What the evaluator table adds up per evaluator; the incremental report builder
    keeps these sums too and turns them into weights with :func:`evaluator_stats`."""

    verdicts: int = 0
    subjects: int = 0  # how many distinct subjects
    outcomes: set[str] = field(default_factory=set)
    positive_verdicts: int = 0  # verdicts of value >= the polarity threshold
    positives: int = 0
    negatives: int = 0
    tp: int = 0
    tn: int = 0
    #: (truth, value) of every graded verdict
    graded: list[tuple[bool, float]] = field(default_factory=list)
    #: v4: its verdicts rated against probes, checks and admissions
    rated: Rated = NOTHING_RATED


def evaluator_table(evidence: Evidence, policy: Policy) -> dict[str, EvaluatorStats]:
    """Stats for every evaluator that gave a counted verdict, keyed by its key id.

    Two passes over the verdicts (the first finds, under v4, which subjects are
    established) after one pass over facts and probes: O(total).
    Evaluators that are absent (under v1, buyers who only gave value judgments) weigh
    ``policy.evaluators.default_weight`` with no offset.
    """
    excluded = set_aside(evidence)
    truth = truth_index(evidence.facts, evidence.probes, excluded)
    claims = claims_index(evidence.facts, excluded) if policy.evaluators.rates else {}
    threshold = policy.evaluators.polarity_threshold

    sums: dict[str, EvaluatorSums] = {}
    blind = policy.blind_grading
    attested: list[tuple[str, str, Contribution | None]] = []
    raters: dict[str, set[str]] = {}  # subject -> evaluators with a rated verdict on it
    for (evaluator, ikey), a in standing(evidence.attestations, excluded).items():
        if a is not None:
            key = (a.reporter, a.interaction, a.subject)
            graded = graded_truth(truth.get(key), a.seq, blind)
            rated = rated_truth(truth.get(key), claims.get(key)) if claims else None
            c = rated_contribution(a.outcome, a.corrections, graded, policy, rated)
            attested.append((evaluator, ikey[-1], c))
            if c is not None and c[3] is not None:
                raters.setdefault(ikey[-1], set()).add(evaluator)

    def add(evaluator: str, c: Contribution | None, subject: str) -> None:
        if c is None:
            return  # DECLINED takes no part
        acc = sums.get(evaluator)
        if acc is None:
            acc = sums[evaluator] = EvaluatorSums()
        acc.apply(c, subject, +1, threshold,
                  established(len(raters.get(subject, ())), policy))

    for evaluator, subject, c in attested:
        add(evaluator, c, subject)
    if policy.counts_value_judgments:
        for (evaluator, vkey), v in standing(evidence.value_judgments, excluded).items():
            if v is not None:
                add(evaluator, rated_contribution(v.judgment, 0, None, policy, None),
                    vkey[-1])
    return {e: evaluator_stats(e, record_of([acc.part()]), policy)
            for e, acc in sorted(sums.items())}


V = TypeVar("V", Attestation, ValueJudgment)


def verdict_key(v: Attestation | ValueJudgment) -> tuple[str, tuple[str, ...]]:
    """(evaluator, what it judged): an attestation's interaction, ``(reporter,
    interaction, subject)``, or a value judgment's engagement, ``("e", reporter,
    engagement, subject)``. The subject is last in both."""
    if isinstance(v, Attestation):
        return v.evaluator, (v.reporter, v.interaction, v.subject)
    return v.evaluator, ("e", v.reporter, v.engagement, v.subject)


def standing(verdicts: Iterable[V], excluded: Mapping[str, str],
             ) -> dict[tuple[str, tuple[str, ...]], V | None]:
    """"One verdict per evaluator per interaction: the first stands." Per
    :func:`verdict_key`, the first verdict not set aside; None when all of them are."""
    out: dict[tuple[str, tuple[str, ...]], V | None] = {}
    for v in verdicts:
        key = verdict_key(v)
        if v.entry_id in excluded:
            out.setdefault(key, None)
            continue
        first = out.get(key)
        if first is None or v.seq < first.seq:
            out[key] = v
    return out


def contribution(outcome: str, corrections: int, truth: bool | None,
                 policy: Policy) -> Graded | None:
    """An evaluator's standing verdict as graded: (outcome, value, the ground truth it is
    graded against or None). An unscored outcome (``DECLINED``) adds nothing; without
    ground truth it counts towards verdicts and subjects only — dropped from the sample,
    not marked wrong."""
    if policy.is_unscored(outcome):
        return None
    return outcome, policy.outcome_value(outcome, corrections), truth


def rated_contribution(outcome: str, corrections: int, truth: bool | None, policy: Policy,
                       rated: bool | None) -> Contribution | None:
    """What an evaluator's standing verdict adds to its record: :func:`contribution` and,
    under v4, what rates it (None: nothing, or not v4)."""
    graded = contribution(outcome, corrections, truth, policy)
    return None if graded is None else (*graded, rated)


def _shrunk(errors: list[float], k: int) -> float:
    """``n·d / (n + k)`` with ``d`` the mean of ``errors`` (0 with none)."""
    n = len(errors)
    return n * (math.fsum(errors) / n) / (n + k) if n else 0.0


class _Sample(NamedTuple):
    """An evaluator's verdicts graded against ground truth: how many (``n``), its
    smoothed rates, informedness ``j``, accuracy and mean error ``d`` (None at n = 0)."""

    n: int
    tpr: float
    tnr: float
    j: float
    accuracy: float | None
    d: float | None


def _sample(acc: EvaluatorRecord) -> _Sample:
    errors = [value - (1.0 if truth else 0.0) for truth, value in acc.graded]
    n = len(errors)
    tpr = (acc.tp + 1) / (acc.positives + 2)
    tnr = (acc.tn + 1) / (acc.negatives + 2)
    j = min(1.0, max(0.0, tpr + tnr - 1))
    return _Sample(n, tpr, tnr, j, (acc.tp + acc.tn) / n if n else None,
                   math.fsum(errors) / n if n else None)


def evaluator_stats(evaluator: str, acc: EvaluatorRecord, policy: Policy) -> EvaluatorStats:
    """An evaluator's weight and recentring offsets from its sums (SPEC §7, §7.1); under
    v4 its weight, rates and voice (:mod:`bureau.scoring.rates`)."""
    rules = policy.evaluators
    graded = _sample(acc)
    if rules.rates is not None:
        return _rated_stats(evaluator, acc, policy, graded)
    n, tpr, tnr, j, accuracy, d = graded
    floor = rules.uninformative_min_samples
    k, prior_weight = rules.weight_prior
    if n + k > 0:
        weight = (n * j + k * prior_weight) / (n + k)
        offset = n * d / (n + k) if d is not None else 0.0
    else:
        weight, offset = rules.default_weight, 0.0
    if policy.per_polarity_offsets:
        # d+ over positive verdicts whose truth passed, d- over negative ones whose
        # truth failed, each shrunk by its own count (SPEC §7.1.5)
        threshold = rules.polarity_threshold
        offset_pos = _shrunk([v - 1.0 for t, v in acc.graded if t and v >= threshold], k)
        offset_neg = _shrunk([v - 0.0 for t, v in acc.graded if not t and v < threshold], k)
    else:
        offset_pos = offset_neg = offset
    provisional = n < rules.calibration_samples
    uninformative = floor is not None and n >= floor and j == 0
    constant = _constant(acc, policy, provisional)
    return EvaluatorStats(
        evaluator=evaluator,
        verdicts=acc.verdicts,
        subjects=acc.subjects,
        n=n,
        positives=acc.positives,
        negatives=acc.negatives,
        tp=acc.tp,
        tn=acc.tn,
        tpr=tpr,
        tnr=tnr,
        informedness=j,
        accuracy=accuracy,
        mean_error=d,
        offset=offset,
        offset_positive=offset_pos,
        offset_negative=offset_neg,
        constant=constant,
        uninformative=uninformative,
        provisional=provisional,
        weight=0.0 if constant or uninformative else weight,
    )


def _rated_stats(evaluator: str, acc: EvaluatorRecord, policy: Policy,
                 graded: _Sample) -> EvaluatorStats:
    """v4: the weight, rates and voice of :func:`evaluator_stats` from the evaluator's
    rated verdicts (:mod:`bureau.scoring.rates`); no recentring offsets."""
    rules = policy.evaluators
    assert rules.rates is not None
    rates = caller_rates(acc.rated, policy)
    provisional = not rates.calibrated
    informedness = round(rates.alpha - rates.beta, rules.rates.decimals)
    floor = rules.uninformative_min_samples
    uninformative = (floor is not None and acc.rated.graded >= floor
                     and informedness <= rules.rates.min_informedness)
    constant = _constant(acc, policy, provisional)
    alpha, beta = (prior_rates(rules.rates) if provisional
                   else (rates.alpha, rates.beta))
    weight = rules.default_weight if provisional else rules.rates.calibrated_weight
    return EvaluatorStats(
        evaluator, acc.verdicts, acc.subjects, graded.n, acc.positives, acc.negatives,
        acc.tp, acc.tn, graded.tpr, graded.tnr, graded.j, graded.accuracy, graded.d,
        0.0, 0.0, 0.0, constant, uninformative, provisional,
        0.0 if constant or uninformative else weight, acc.rated.graded,
        acc.rated.subjects, alpha, beta, rates.voice)


def _constant(acc: EvaluatorRecord, policy: Policy, provisional: bool) -> bool:
    """The constant-rater rule of the policy (SPEC §7; §7.1.4 from v2 on)."""
    cr = policy.evaluators.constant_rater
    if isinstance(cr, PolarityConstantRater):
        # at least min_share of the verdicts on one side, compared in whole percent so
        # that 95 % of 20 is exactly 19 (0.95 * 20 is not exact in binary)
        one_side = max(acc.positive_verdicts, acc.verdicts - acc.positive_verdicts)
        return (
            provisional
            and acc.verdicts >= cr.min_verdicts
            and acc.subjects >= cr.min_subjects
            and one_side * 100 >= round(cr.min_share * 100) * acc.verdicts
        )
    return (
        acc.verdicts >= cr.min_attestations
        and acc.subjects >= cr.min_subjects
        and len(acc.outcomes) == 1
    )


def default_weighing(policy: Policy) -> Weighing:
    """How a key with no record weighs: the policy's default, no offset; provisional
    whenever the policy has provisional evaluators at all; under v4 at the rates of a key
    with no record."""
    rules = policy.evaluators
    alpha, beta = (0.0, 0.0) if rules.rates is None else prior_rates(rules.rates)
    return Weighing(weight=rules.default_weight, offset_positive=0.0,
                    offset_negative=0.0, provisional=rules.calibration_samples > 0,
                    rate_positive=alpha, rate_negative=beta)


def evaluator_weight(
    evaluators: Mapping[str, EvaluatorStats], evaluator: str, policy: Policy
) -> float:
    """``w_e`` for any key: its record's weight, or the default for a key with none."""
    stats = evaluators.get(evaluator)
    return stats.weight if stats is not None else policy.evaluators.default_weight


# --------------------------------------------------------------------------- sums


@dataclass(frozen=True, slots=True)
class EvaluatorPart:
    """One shard's sums for one evaluator, as handed to the book (:mod:`bureau.scoring.book`).
    A subject belongs to one shard only, so distinct subjects add up across shards."""

    verdicts: int
    subjects: int
    outcomes: frozenset[str]
    positive_verdicts: int
    positives: int
    negatives: int
    tp: int
    tn: int
    graded: tuple[tuple[tuple[bool, float], int], ...]  # ((truth, value), how many times)
    rated: Rated = NOTHING_RATED  # v4


@dataclass
class EvaluatorSums:
    """One evaluator's record as counters whose multiset semantics let a contribution
    be taken out again (the incremental deriver swaps contributions as verdicts,
    ground truth and exclusions arrive; the whole-ledger table only adds)."""

    subjects: Counter[str] = field(default_factory=Counter)
    outcomes: Counter[str] = field(default_factory=Counter)
    graded: Counter[tuple[bool, float]] = field(default_factory=Counter)
    verdicts: int = 0
    positive_verdicts: int = 0
    positives: int = 0
    negatives: int = 0
    tp: int = 0
    tn: int = 0
    #: v4: its rated verdicts (:class:`bureau.scoring.rates.RatedSums`)
    rated: RatedSums = field(default_factory=RatedSums)

    def apply(self, c: Contribution, subject: str, sign: int, threshold: float,
              established: bool = False) -> None:
        """Add (``sign`` 1) or take out (-1) one contribution about ``subject``; under v4
        its rated part counts when ``subject`` is established."""
        outcome, value, truth, rated = c
        self.verdicts += sign
        called_pass = value >= threshold
        self.positive_verdicts += sign * called_pass
        _bump(self.subjects, subject, sign)
        _bump(self.outcomes, outcome, sign)
        if rated is not None:
            self.rated.add(subject, rated, called_pass, sign, established)
        if truth is None:
            return
        if truth:
            self.positives += sign
            self.tp += sign * called_pass
        else:
            self.negatives += sign
            self.tn += sign * (not called_pass)
        _bump(self.graded, (truth, value), sign)

    def part(self) -> EvaluatorPart:
        return EvaluatorPart(self.verdicts, len(self.subjects), frozenset(self.outcomes),
                             self.positive_verdicts, self.positives, self.negatives,
                             self.tp, self.tn, tuple(self.graded.items()),
                             self.rated.rated())


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
        verdicts=sum(p.verdicts for p in parts),
        subjects=sum(p.subjects for p in parts),
        outcomes=set().union(*(p.outcomes for p in parts)),
        positive_verdicts=sum(p.positive_verdicts for p in parts),
        positives=sum(p.positives for p in parts), negatives=sum(p.negatives for p in parts),
        tp=sum(p.tp for p in parts), tn=sum(p.tn for p in parts),
        graded=list(chain.from_iterable(repeat(e, n) for p in parts for e, n in p.graded)),
        rated=Rated(*(sum(column) for column in zip(*(p.rated for p in parts), strict=True))))
