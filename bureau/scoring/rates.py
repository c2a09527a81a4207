"""Policy v4: how often an evaluator's verdict is positive on a right call (``alpha``) and
on a wrong call (``beta``), learned from ground truth only (SPEC §1.2, §7.2 r4;
docs/scoring.md "Policy v4").

A verdict is *rated* against its interaction's latest probe, else its deliverable check,
else the agent's witnessed admission (``claimed: FAILURE``: the call was wrong). Never
against other evaluators: agreement is what a ring can supply. What an evaluator could
read before its verdict (a check, an admission) rates it too — that is what lets an
honest caller's record grow where blind probes are rare — and so:

* a perfect record is never worth more than ``error_floor`` allows;
* a subject rates its evaluators only once it is *established*: at least
  ``established_raters`` evaluators have been rated on it. A ring of fewer keys that
  farms a record on decoy agents of its own, which nobody else calls, earns nothing
  there (a ring of that many keys or more establishes its decoys itself:
  docs/scoring.md, "What a calibrated ring still buys");
* the record buys a *voice* about each subject only in proportion to how much of it was
  rated beyond calibration (``samples_per_voice``), and only once it spans
  ``calibration_subjects`` subjects. Until then the evaluator is provisional: its
  verdicts share one voice per subject with every other provisional one's, at the rates
  of a key with no record.

Pure integer sums in, floats out: the incremental and the reference path hold the same
counters (:class:`bureau.scoring.evaluators.EvaluatorSums`), so both compute the same
bits.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from bureau.scoring.inputs import CLAIM_FAILURE
from bureau.scoring.policy import CallerRates, Policy
from bureau.scoring.truth import Truth


class Rated(NamedTuple):
    """An evaluator's verdicts rated against ground truth: ``positives`` (P) graded
    right calls and ``negatives`` (N) wrong ones; ``true_positives`` of the P were called
    positive, ``true_negatives`` of the N negative; ``subjects`` the distinct subjects
    among them."""

    positives: int
    negatives: int
    true_positives: int
    true_negatives: int
    subjects: int

    @property
    def graded(self) -> int:
        return self.positives + self.negatives


NOTHING_RATED = Rated(0, 0, 0, 0, 0)


@dataclass
class RatedSums:
    """One evaluator's rated verdicts as counters that a verdict can be taken out of
    again: per subject (P, N, true positives, true negatives), and those of the
    established subjects summed (:meth:`rated`). Whether a subject is established is the
    subject's to say (the caller passes it, and calls :meth:`establish` when it changes),
    so every count is an integer and both derivation paths hold the same ones."""

    by_subject: dict[str, list[int]] = field(default_factory=dict)
    totals: list[int] = field(default_factory=lambda: [0, 0, 0, 0])
    breadth: int = 0  # established subjects it has a rated verdict about

    def add(self, subject: str, right: bool, called_positive: bool, sign: int,
            established: bool) -> None:
        """Add (``sign`` 1) or take out (-1) one rated verdict about ``subject``."""
        counts = self.by_subject.setdefault(subject, [0, 0, 0, 0])
        had = counts[0] + counts[1]
        step = ([sign, 0, sign * called_positive, 0] if right
                else [0, sign, 0, sign * (not called_positive)])
        for i, d in enumerate(step):
            counts[i] += d
        now = counts[0] + counts[1]
        if established:
            for i, d in enumerate(step):
                self.totals[i] += d
            self.breadth += (now > 0) - (had > 0)
        if not now:
            del self.by_subject[subject]

    def establish(self, subject: str, established: bool) -> None:
        """``subject`` became established (or stopped being): its counts join the sums
        (or leave them)."""
        counts = self.by_subject.get(subject)
        if counts is None:
            return
        sign = 1 if established else -1
        for i, n in enumerate(counts):
            self.totals[i] += sign * n
        self.breadth += sign

    def rated(self) -> Rated:
        p, n, tp, tn = self.totals
        return Rated(p, n, tp, tn, self.breadth)


def established(raters: int, policy: Policy) -> bool:
    """Whether a subject on which ``raters`` distinct evaluators have rated verdicts
    rates them (under v4; under every other policy no verdict is rated)."""
    rules = policy.evaluators.rates
    return rules is not None and raters >= rules.established_raters


class Rates(NamedTuple):
    """A v4 evaluator's own rates — ``alpha`` = P(positive | right), ``beta`` =
    P(positive | wrong) — whether it is calibrated, and its voice about one subject (in
    verdicts; 0 when provisional: its verdicts are weighed at :func:`prior_rates` then)."""

    alpha: float
    beta: float
    calibrated: bool
    voice: float


def rated_truth(truth: Truth | None, claimed: str | None) -> bool | None:
    """What rates a verdict (v4): the interaction's ground truth (its latest probe, else
    its check), else the agent's own witnessed admission — a wrong call — else nothing."""
    if truth is not None:
        return truth[0]
    return False if claimed == CLAIM_FAILURE else None


def _within(low: float, x: float, high: float) -> float:
    return min(high, max(low, x))


def prior_rates(rules: CallerRates) -> tuple[float, float]:
    """(alpha, beta) of a key with no record: the prior error rate on both sides."""
    errors, rights = rules.error_prior
    eps = _within(rules.error_floor, errors / (errors + rights), rules.error_ceiling)
    return round(1.0 - eps, rules.decimals), round(eps, rules.decimals)


def caller_rates(rated: Rated, policy: Policy) -> Rates:
    """The evaluator's rates and voice from its rated verdicts (see the module)."""
    rules = policy.evaluators.rates
    assert rules is not None and policy.settling is not None
    p, n = rated.positives, rated.negatives
    errors = (p - rated.true_positives) + (n - rated.true_negatives)
    e0, r0 = rules.error_prior
    floor = rules.error_floor
    pooled = _within(floor, (errors + e0) / (p + n + e0 + r0), rules.error_ceiling)
    k = rules.shrink
    missed = (p - rated.true_positives + k * pooled) / (p + k)
    accepted_wrong = (n - rated.true_negatives + k * pooled) / (n + k)
    alpha = round(min(1.0 - floor, 1.0 - missed), rules.decimals)
    beta = round(max(floor, accepted_wrong), rules.decimals)
    calibrated = (rated.graded >= policy.evaluators.calibration_samples
                  and rated.subjects >= rules.calibration_subjects)
    if not calibrated:
        return Rates(alpha, beta, False, 0.0)
    beyond = max(0, rated.graded - policy.evaluators.calibration_samples)
    voice = min(policy.settling.per_evaluator_subject, beyond / rules.samples_per_voice)
    return Rates(alpha, beta, True, voice)
