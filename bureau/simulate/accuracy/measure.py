"""What the accuracy benchmark measures: per policy, how well the scores of a played
plan (:mod:`.play`) track the agents' true quality, and the same for the two anchors
and the sampling ceiling (issue 23).

Every policy is applied to the same evidence with :mod:`bureau.scoring` (the evaluator
table over the plan's ledger, then each agent's score), so the policies are compared on
identical submissions; for the policy the bureau itself scores with, the published
reports must agree with that computation, and :attr:`Figures.matches_bureau` says so.

* ``tau`` — Kendall's τ-b between the score and the true quality (a null score counts
  as 0.5); ``mae`` — mean |score − q| (null as 0.5);
* ``covered`` — share of agents with a score whose 95 % interval holds ``q``;
  ``width`` — mean ``high − low`` over them; ``null`` — agents with no score;
* ``honest_share`` — the honest callers' share of all settled weight;
* ``gap`` — mean bias (score − q) of the admitting half minus that of the bluffing half:
  positive when honesty wins.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bureau.scoring import Evidence, Policy, evaluator_table, score_agent, wilson_interval
from bureau.scoring.policy import policy_v1
from bureau.scoring.truth import set_aside, truth_index
from bureau.simulate.accuracy.play import Played
from bureau.simulate.accuracy.population import Plan

NULL_SCORE = 0.5
Z95 = 1.96


@dataclass(frozen=True)
class Figures:
    tau: float
    mae: float
    covered: float
    width: float
    null: int
    honest_share: float | None
    gap: float
    matches_bureau: bool | None = None


def kendall_tau(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Kendall's τ-b (ties in either variable are accounted for)."""
    concordant = discordant = ties_x = ties_y = 0
    n = len(xs)
    for i in range(n):
        for j in range(i + 1, n):
            dx, dy = xs[i] - xs[j], ys[i] - ys[j]
            if dx == 0 and dy == 0:
                continue
            if dx == 0:
                ties_x += 1
            elif dy == 0:
                ties_y += 1
            elif (dx > 0) == (dy > 0):
                concordant += 1
            else:
                discordant += 1
    denom = math.sqrt((concordant + discordant + ties_x) * (concordant + discordant + ties_y))
    return (concordant - discordant) / denom if denom else 0.0


Estimate = tuple[float, float, float] | None  # (value, low, high), None: no score


def figures(plan: Plan, estimates: Sequence[Estimate], honest_share: float | None,
            matches: bool | None = None) -> Figures:
    truth = [a.quality for a in plan.agents]
    points = [e[0] if e is not None else NULL_SCORE for e in estimates]
    scored = [(e, q) for e, q in zip(estimates, truth, strict=True) if e is not None]
    admit = [p - a.quality for p, a in zip(points, plan.agents, strict=True) if a.admits]
    bluff = [p - a.quality for p, a in zip(points, plan.agents, strict=True) if not a.admits]
    return Figures(
        tau=kendall_tau(points, truth),
        mae=math.fsum(abs(p - q) for p, q in zip(points, truth, strict=True)) / len(truth),
        covered=(sum(e[1] <= q <= e[2] for e, q in scored) / len(scored)) if scored else 0.0,
        width=(math.fsum(e[2] - e[1] for e, _ in scored) / len(scored)) if scored else 0.0,
        null=len(truth) - len(scored),
        honest_share=honest_share,
        gap=math.fsum(admit) / len(admit) - math.fsum(bluff) / len(bluff),
        matches_bureau=matches,
    )


def _estimate(score: Mapping[str, Any] | None) -> Estimate:
    return None if score is None else (score["value"], score["low"], score["high"])


def under_policy(played: Played, policy: Policy, policy_hash: str | None = None) -> Figures:
    """The plan's figures when its evidence is scored under ``policy``."""
    table = evaluator_table(played.evidence, policy)
    honest = {k for k, label in played.callers.items() if label.startswith("caller-")}
    estimates: list[Estimate] = []
    theirs = total = 0.0
    matches: bool | None = None if policy_hash != played.policy else True
    for kid, report in zip(played.agents, played.reports, strict=True):
        result = score_agent(kid, played.evidence, policy, table)
        for r, weight in zip(result.resolutions, result.settled, strict=True):
            total += weight
            theirs += weight if r.evaluator in honest else 0.0
        estimates.append(_estimate(result.score))
        if matches is not None:
            matches = matches and report["score"] == result.score
    return figures(played.plan, estimates, theirs / total if total else 0.0, matches)


def _wilson(values: Sequence[float]) -> Estimate:
    if not values:
        return None
    p = math.fsum(values) / len(values)
    low, high = wilson_interval(p, len(values), Z95)
    return p, low, high


def plain_mean(played: Played) -> Figures:
    """Anchor: the plain mean of every caller's rating of each agent (attestations and
    value judgments at their v1 values, declines aside) — an ERC-8004 ``getSummary``
    over all clients."""
    v1 = policy_v1()
    by_agent: dict[str, list[float]] = {k: [] for k in played.agents}
    for a in played.evidence.attestations:
        if not v1.is_unscored(a.outcome):
            by_agent[a.subject].append(v1.outcome_value(a.outcome, a.corrections))
    for v in played.evidence.value_judgments:
        by_agent[v.subject].append(v1.outcome_value(v.judgment))
    return figures(played.plan, [_wilson(by_agent[k]) for k in played.agents], None)


def truth_mean(played: Played) -> Figures:
    """Anchor: the share of an agent's ground-truth calls (latest probe, else check) that
    passed; declined calls aside (declining is free)."""
    ev: Evidence = played.evidence
    truth = truth_index(ev.facts, ev.probes, set_aside(ev))
    declined = {(f.reporter, f.interaction, f.subject) for f in ev.facts
                if f.claimed == "DECLINED"}
    by_agent: dict[str, list[float]] = {k: [] for k in played.agents}
    for key, (passed, _) in truth.items():
        if key not in declined:
            by_agent[key[2]].append(1.0 if passed else 0.0)
    return figures(played.plan, [_wilson(by_agent[k]) for k in played.agents], None)


def ceiling(plan: Plan) -> float:
    """The τ of each agent's realised share of right answers: sampling the calls caps
    every estimator's τ at about this."""
    return kendall_tau([plan.realised(a.index) or 0.0 for a in plan.agents],
                       [a.quality for a in plan.agents])


def price_ceiling(plan: Plan) -> float:
    """The τ of each agent's realised outcome price over every call it attempted (right
    at the price of ``ACCEPTED``, a wrong answer it admitted at ``FAILED_ADMITTED``'s, a
    bluffed one at ``FAILED_DISCOVERED``'s): what a perfect judge of these very calls
    publishes when, as v4 does, it publishes the price rather than ``q``. The honest
    premium ``0.15·(1 − q)`` reorders admitters among bluffers of nearby quality, so even
    this judge ranks below the ceiling against ``q``."""
    v1 = policy_v1()
    prices = []
    for a in plan.agents:
        tried = [c for c in plan.calls if c.agent == a.index and c.attempted
                 and c.value is None]
        paid = [v1.outcome_value("ACCEPTED" if c.right else "FAILED_ADMITTED"
                                 if c.claimed == "FAILURE" else "FAILED_DISCOVERED")
                for c in tried]
        prices.append(math.fsum(paid) / len(paid) if paid else 0.0)
    return kendall_tau(prices, [a.quality for a in plan.agents])


def mean_figures(runs: Iterable[Figures]) -> Figures:
    rows = list(runs)
    n = len(rows)

    def avg(get: Any) -> float:
        return math.fsum(get(r) for r in rows) / n

    shares = [r.honest_share for r in rows if r.honest_share is not None]
    matched = [r.matches_bureau for r in rows if r.matches_bureau is not None]
    return Figures(
        tau=avg(lambda r: r.tau), mae=avg(lambda r: r.mae), covered=avg(lambda r: r.covered),
        width=avg(lambda r: r.width), null=round(avg(lambda r: r.null)),
        honest_share=math.fsum(shares) / len(shares) if shares else None,
        gap=avg(lambda r: r.gap), matches_bureau=all(matched) if matched else None)
