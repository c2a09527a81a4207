"""The score (SPEC §7): every scored interaction's (weight, value), settled (SPEC §7.1
steps c-d, v2 only), summed into a weighted mean pulled towards the policy's prior,
with its Wilson interval, and the shares of the weight by where it came from.

This is the only place a score is computed. The reference path
(:func:`bureau.scoring.report.score_agent`) hands it one term per resolved unit; the
incremental deriver (:meth:`bureau.views.parts.AgentState.rescore`) hands it the same
terms counted (a term that n units share, once with ``n``). Both get the same numbers:
:func:`math.fsum` is exact, so neither the order of the terms nor repeating one n times
inside it changes a sum, and settling multiplies each term's weight by factors that
depend only on counts and exact sums.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import chain, repeat
from typing import Any

from bureau.scoring.policy import Policy

#: Why a report's score is null; the explanation carries it as ``score_reason``.
NO_SCORED_EVIDENCE = "no_scored_evidence"  # nothing resolved to a scored outcome
NO_WEIGHTED_EVIDENCE = "no_weighted_evidence"  # scored outcomes, but all at weight 0

SCORE_REASON_TEXT = {
    NO_SCORED_EVIDENCE: "no interaction resolved to a scored outcome code",
    NO_WEIGHTED_EVIDENCE: "every scored outcome came from an evaluator of weight 0",
}

#: One scored term: (weight, value, the rule that decided it, how many units share it,
#: the evaluator behind rules 3-4 or None, whether that evaluator is provisional).
Term = tuple[float, float, int, int, "str | None", bool]


@dataclass(frozen=True, slots=True)
class Score:
    """A report's ``score`` object (None when there is none, and ``reason`` says why)
    and the shares of its weight, before rounding."""

    score: dict[str, Any] | None
    reason: str | None
    value_judgment_share: float
    ground_truth_share: float = 0.0
    provisional_share: float = 0.0


def wilson_interval(p: float, n: float, z: float) -> tuple[float, float]:
    """SPEC §7: ``(p + z²/2n ± z·sqrt(p(1−p)/n + z²/4n²)) / (1 + z²/n)``, for ``n > 0``."""
    z2 = z * z
    centre = p + z2 / (2 * n)
    half = z * math.sqrt(max(0.0, p * (1 - p) / n + z2 / (4 * n * n)))
    denom = 1 + z2 / n
    return max(0.0, (centre - half) / denom), min(1.0, (centre + half) / denom)


def cap_terms(terms: list[Term], policy: Policy) -> list[Term]:
    """SPEC §7.1 steps (c) and (d), for one subject; v1 has no settling.

    (c) an evaluator with ``m > K`` verdicts here has each multiplied by ``K/m`` (under
    v3 only a calibrated one: provisional verdicts are bounded by (d) alone);
    (d) if the provisional verdicts then weigh ``Σ > C_prov``, each is multiplied by
    ``C_prov/Σ``. (Step b — a verdict of weight 0 resolves nothing — happened when the
    units were resolved, :func:`bureau.scoring.outcomes.decide`.)"""
    rules = policy.settling
    if rules is None:
        return terms
    k = rules.per_evaluator_subject
    exempt = rules.per_evaluator_applies_to == "calibrated"  # provisional ones are not bound
    verdicts: dict[str, int] = {}
    for _, _, _, n, evaluator, prov in terms:
        if evaluator is not None and not (exempt and prov):
            verdicts[evaluator] = verdicts.get(evaluator, 0) + n
    capped = [
        (w * (k / verdicts[e]), v, rule, n, e, prov)
        if e is not None and verdicts.get(e, 0) > k else (w, v, rule, n, e, prov)
        for w, v, rule, n, e, prov in terms
    ]
    provisional = math.fsum(chain.from_iterable(
        repeat(w, n) for w, _, _, n, _, prov in capped if prov))
    if provisional <= rules.provisional_total:
        return capped
    factor = rules.provisional_total / provisional
    return [(w * factor, v, rule, n, e, prov) if prov else (w, v, rule, n, e, prov)
            for w, v, rule, n, e, prov in capped]


def score_terms(terms: Iterable[Term], policy: Policy) -> Score:
    """The score of an agent whose scored units gave ``terms`` (before settling)."""
    terms = cap_terms([t for t in terms if t[3]], policy)
    if not terms:
        return Score(None, NO_SCORED_EVIDENCE, 0.0)
    # One pass: every weight and weighted value, repeated as many times as units share
    # it, and the weights by where they came from (fsum is exact: order and grouping do
    # not change a sum).
    weights: list[float] = []
    weighted: list[float] = []
    by_vj: list[float] = []
    by_truth: list[float] = []
    by_provisional: list[float] = []
    for w, v, rule, n, _, provisional in terms:
        ws = [w] * n
        weights += ws
        weighted += [w * v] * n
        if rule == 4:
            by_vj += ws
        elif rule == 1:
            by_truth += ws
        if provisional:
            by_provisional += ws
    total_w = math.fsum(weights)
    if total_w <= 0:
        return Score(None, NO_WEIGHTED_EVIDENCE, 0.0)
    rules, rnd = policy.score, policy.round
    k = rules.prior_observations
    p = (math.fsum(weighted) + k * rules.prior_value) / (total_w + k)
    low, high = wilson_interval(p, total_w, rules.wilson_z)
    score = {"value": rnd(p), "low": rnd(low), "high": rnd(high), "weight": rnd(total_w),
             "interactions": sum(t[3] for t in terms)}
    return Score(score, None, math.fsum(by_vj) / total_w, math.fsum(by_truth) / total_w,
                 math.fsum(by_provisional) / total_w)
