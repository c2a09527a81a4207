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
from collections.abc import Callable, Iterable
from itertools import chain, repeat

from bureau.scoring.evaluators import Weighing, default_weighing
from bureau.scoring.policy import Policy
from bureau.scoring.posterior import posterior_score
from bureau.scoring.terms import (
    NO_CALIBRATED_EVIDENCE,
    NO_SCORED_EVIDENCE,
    NO_WEIGHTED_EVIDENCE,
    SCORE_REASON_TEXT,
    Score,
    Term,
)

__all__ = ["NO_CALIBRATED_EVIDENCE", "NO_SCORED_EVIDENCE", "NO_WEIGHTED_EVIDENCE",
           "SCORE_REASON_TEXT", "Score", "Term", "cap_terms", "score_terms",
           "wilson_interval"]


def wilson_interval(p: float, n: float, z: float) -> tuple[float, float]:
    """SPEC §7: ``(p + z²/2n ± z·sqrt(p(1−p)/n + z²/4n²)) / (1 + z²/n)``, for ``n > 0``."""
    z2 = z * z
    centre = p + z2 / (2 * n)
    half = z * math.sqrt(max(0.0, p * (1 - p) / n + z2 / (4 * n * n)))
    denom = 1 + z2 / n
    return max(0.0, (centre - half) / denom), min(1.0, (centre + half) / denom)


#: How each evaluator weighs (its record's weighing, or a key with none's).
Weighings = Callable[[str], Weighing]


def cap_terms(terms: list[Term], policy: Policy, weighing: Weighings | None = None
              ) -> list[Term]:
    """SPEC §7.1 steps (c) and (d), for one subject; v1 has no settling.

    (c) an evaluator with ``m > K`` verdicts here has each multiplied by ``K/m`` (under
    v3 only a calibrated one: provisional verdicts are bounded by (d) alone; under v4
    its ``K`` is its own voice, :mod:`bureau.scoring.rates`, from ``weighing``);
    (d) if the provisional verdicts then weigh ``Σ > C_prov``, each is multiplied by
    ``C_prov/Σ``. (Step b — a verdict of weight 0 resolves nothing — happened when the
    units were resolved, :func:`bureau.scoring.outcomes.decide`.)"""
    rules = policy.settling
    if rules is None:
        return terms
    exempt = rules.per_evaluator_applies_to == "calibrated"  # provisional ones are not bound
    verdicts: dict[str, int] = {}
    for _, _, _, n, evaluator, prov in terms:
        if evaluator is not None and not (exempt and prov):
            verdicts[evaluator] = verdicts.get(evaluator, 0) + n
    voices = {e: rules.per_evaluator_subject for e in verdicts}
    if policy.evaluators.rates is not None:
        get = weighing or (lambda _: default_weighing(policy))
        voices = {e: get(e).voice for e in verdicts}
    capped = [
        (w * (voices[e] / verdicts[e]), v, rule, n, e, prov)
        if e is not None and e in verdicts and verdicts[e] > voices[e]
        else (w, v, rule, n, e, prov)
        for w, v, rule, n, e, prov in terms
    ]
    provisional = math.fsum(chain.from_iterable(
        repeat(w, n) for w, _, _, n, _, prov in capped if prov))
    if provisional <= rules.provisional_total:
        return capped
    factor = rules.provisional_total / provisional
    return [(w * factor, v, rule, n, e, prov) if prov else (w, v, rule, n, e, prov)
            for w, v, rule, n, e, prov in capped]


def score_terms(terms: Iterable[Term], policy: Policy, weighing: Weighings | None = None
                ) -> Score:
    """The score of an agent whose scored units gave ``terms`` (before settling); under
    v4 a posterior (:mod:`bureau.scoring.posterior`) over them, each verdict weighed as
    ``weighing`` says its evaluator weighs."""
    terms = cap_terms([t for t in terms if t[3]], policy, weighing)
    if policy.posterior is not None:
        return posterior_score(terms, policy, weighing or (lambda _: default_weighing(policy)))
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
    rnd = policy.round
    k, prior, z = policy.score.weighted_mean
    p = (math.fsum(weighted) + k * prior) / (total_w + k)
    low, high = wilson_interval(p, total_w, z)
    score = {"value": rnd(p), "low": rnd(low), "high": rnd(high), "weight": rnd(total_w),
             "interactions": sum(t[3] for t in terms)}
    return Score(score, None, math.fsum(by_vj) / total_w, math.fsum(by_truth) / total_w,
                 math.fsum(by_provisional) / total_w)
