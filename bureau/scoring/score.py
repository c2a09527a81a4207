"""The score (SPEC §7): every scored interaction's (weight, value), summed into a
weighted mean pulled towards the policy's prior, with its Wilson interval.

This is the only place a score is computed. The reference path
(:func:`bureau.scoring.report.score_agent`) hands it one term per resolved unit; the
incremental deriver (:meth:`bureau.views.parts.AgentState.rescore`) hands it the same
terms counted (a term that n units share, once with ``n``). Both get the same numbers:
:func:`math.fsum` is exact, so neither the order of the terms nor repeating one n times
inside it changes a sum.
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

#: One scored term: (weight, value, the rule that decided it, how many units share it).
Term = tuple[float, float, int, int]


@dataclass(frozen=True, slots=True)
class Score:
    """A report's ``score`` object (None when there is none, and ``reason`` says why)
    and its ``value_judgment_share``, before rounding of the share."""

    score: dict[str, Any] | None
    reason: str | None
    value_judgment_share: float


def wilson_interval(p: float, n: float, z: float) -> tuple[float, float]:
    """SPEC §7: ``(p + z²/2n ± z·sqrt(p(1−p)/n + z²/4n²)) / (1 + z²/n)``, for ``n > 0``."""
    z2 = z * z
    centre = p + z2 / (2 * n)
    half = z * math.sqrt(max(0.0, p * (1 - p) / n + z2 / (4 * n * n)))
    denom = 1 + z2 / n
    return max(0.0, (centre - half) / denom), min(1.0, (centre + half) / denom)


def score_terms(terms: Iterable[Term], policy: Policy) -> Score:
    """The score of an agent whose scored units gave ``terms``."""
    terms = [t for t in terms if t[3]]
    if not terms:
        return Score(None, NO_SCORED_EVIDENCE, 0.0)
    total_w = math.fsum(chain.from_iterable(repeat(w, n) for w, _, _, n in terms))
    vj_w = math.fsum(chain.from_iterable(repeat(w, n) for w, _, rule, n in terms
                                         if rule == 4))
    if total_w <= 0:
        return Score(None, NO_WEIGHTED_EVIDENCE, 0.0)
    rules, rnd = policy.score, policy.round
    weighted = math.fsum(chain.from_iterable(repeat(w * v, n) for w, v, _, n in terms))
    k = rules.prior_observations
    p = (weighted + k * rules.prior_value) / (total_w + k)
    low, high = wilson_interval(p, total_w, rules.wilson_z)
    score = {"value": rnd(p), "low": rnd(low), "high": rnd(high), "weight": rnd(total_w),
             "interactions": sum(n for _, _, _, n in terms)}
    return Score(score, None, vj_w / total_w)
