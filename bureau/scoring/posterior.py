"""Policy v4's score (docs/scoring.md "Policy v4"): a posterior over what an agent is,
computed on a fixed grid — no iteration, no random start, every sum exact or in a fixed
order — so that the same evidence gives the same bits on either derivation path.

The agent is two numbers. Its *candour* ``s`` is the chance that it does not admit a
call's failure (``claimed: FAILURE``); its *reliability* ``r`` the chance that a call it
does not admit is right. Its quality, the share of its calls that are right, is
``q = r·s``, and the chance that a wrong call is admitted is ``c = (1 − s)/(1 − q)``. In
these two coordinates the evidence of every scored interaction falls apart:

* an admitted failure (rule 1 at the price of ``FAILED_ADMITTED``, or rule 2) says
  "not candid" about ``s`` and nothing about ``r``;
* every other scored interaction says "candid" about ``s``, and about ``r``:
  ground truth, the caller's next step (rules 5-7) and a value judgment (rule 4) as a
  (fractional) Bernoulli observation ``r^v·(1 − r)^(1 − v)`` of their price ``v``; an
  attestation (rule 3) through its evaluator's measured rates,
  ``alpha·r + beta·(1 − r)`` when positive, ``(1 − alpha)·r + (1 − beta)·(1 − r)``
  when negative (:mod:`bureau.scoring.rates`).

Each observation counts with its settled weight (a tempered likelihood: a weight of 0.4
is 0.4 of an observation). With Beta priors on both, ``s`` has a Beta posterior and
``r`` a product of powers, both evaluated on ``grid`` cells of equal width. The
published value is the outcome price ``s·(r·v(ACCEPTED) + (1 − r)·v(FAILED_DISCOVERED))
+ (1 − s)·v(FAILED_ADMITTED)`` — ``q + 0.15·(1 − q)·c`` with v1's prices — at the
posterior means, with ``r`` kept inside the **trust region**: the central
``trust_band`` of the posterior of ``r`` that the agent's own reporter evidence gives
(rules 1, 5, 6, 7: no verdict). A verdict moves a score only within what that evidence
allows. The interval holds ``q`` at its low end and the value at its high end, each
side at the policy's credibility.
"""

from __future__ import annotations

import bisect
import functools
import math
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import accumulate, repeat
from typing import NamedTuple

from bureau.scoring.evaluators import Weighing
from bureau.scoring.policy import Policy, Posterior
from bureau.scoring.terms import (
    NO_CALIBRATED_EVIDENCE,
    NO_SCORED_EVIDENCE,
    NO_WEIGHTED_EVIDENCE,
    Score,
    Term,
)

#: The rules whose price is reporter evidence about ``r`` (no verdict): they make the
#: trust region. Rule 4 (a value judgment) is a verdict; rule 2 speaks only of ``s``.
REPORTER_EVIDENCE = frozenset({1, 5, 6, 7})
ATTESTATION = 3


@functools.cache
def grid(cells: int) -> tuple[tuple[float, ...], tuple[float, ...], tuple[float, ...]]:
    """(midpoints, log of them, log of one minus them) of ``cells`` equal cells of
    (0, 1)."""
    mids = tuple((2 * i + 1) / (2 * cells) for i in range(cells))
    return mids, tuple(math.log(x) for x in mids), tuple(math.log(1.0 - x) for x in mids)


#: How many kinds of verdict likelihood, and of Beta summaries, are kept: a few thousand
#: evaluators give twice as many kinds, and their rates change from seal to seal.
CACHED = 2 ** 16


@functools.lru_cache(maxsize=CACHED)
def mixture(a: float, b: float, cells: int) -> tuple[float, ...]:
    """``log(a·r + b·(1 − r))`` at every midpoint: one kind of verdict's likelihood.
    (A few thousand evaluators give twice as many kinds; each is computed once.)"""
    mids = grid(cells)[0]
    return tuple(math.log(a * r + b * (1.0 - r)) for r in mids)


@dataclass(slots=True)
class Observations:
    """The weighed observations of one agent, split by what they speak of: one weight
    per unit (a term that n units share is n copies of the one unit's weight — the
    reference path has one term per unit, and both must sum to the same bits)."""

    right: list[float]  # weights of "right" (fractional observations: w·v)
    wrong: list[float]
    truth_right: list[float]  # the same, of reporter evidence only (the trust region)
    truth_wrong: list[float]
    candid: list[float]  # weights of "not admitted"
    admitted: list[float]
    verdicts: dict[tuple[float, float], list[float]]  # (a, b) -> weights


def observations(terms: Sequence[Term], policy: Policy,
                 weighing: Callable[[str], Weighing]) -> Observations:
    """What each settled term says about ``r`` and ``s`` (see the module)."""
    ev = Observations([], [], [], [], [], [], {})
    admitted_price = policy.outcome_value("FAILED_ADMITTED")
    threshold = policy.evaluators.polarity_threshold
    for w, v, rule, n, evaluator, _ in terms:
        copies = [w] * n
        if rule in (1, 2) and v == admitted_price:
            ev.admitted += copies
            continue
        ev.candid += copies
        if rule == ATTESTATION and evaluator is not None:
            rates = weighing(evaluator)
            alpha, beta = rates.rate_positive, rates.rate_negative
            kind = (alpha, beta) if v >= threshold else (1.0 - alpha, 1.0 - beta)
            mine = ev.verdicts.get(kind)
            if mine is None:
                ev.verdicts[kind] = copies
            else:
                mine += copies
            continue
        right, wrong = [w * v] * n, [w * (1.0 - v)] * n
        ev.right += right
        ev.wrong += wrong
        if rule in REPORTER_EVIDENCE:
            ev.truth_right += right
            ev.truth_wrong += wrong
    return ev


def _beta_logs(a: float, b: float, cells: int) -> list[float]:
    """The log of an (unnormalised) Beta(a, b) density at every midpoint."""
    _, log_r, log_1r = grid(cells)
    return [(a - 1.0) * x + (b - 1.0) * y for x, y in zip(log_r, log_1r, strict=True)]


class Summary(NamedTuple):
    """A distribution on the grid's cells (piecewise constant) as the score reads it:
    its mean and the points below which ``levels`` of its mass lie."""

    mean: float
    quantiles: tuple[float, ...]


def summarise(logs: Sequence[float], levels: Sequence[float]) -> Summary:
    """The mean and quantiles (linear within a cell) of the distribution whose logs at
    the midpoints are ``logs``; ``levels`` ascending. Sums in grid order."""
    cells = len(logs)
    raw = list(map(math.exp, map(operator.sub, logs, repeat(max(logs), cells))))
    total = math.fsum(raw)
    mean = math.fsum(map(operator.mul, grid(cells)[0], raw)) / total
    # (operator maps and bisect: a re-score of every agent at each seal pays this, and
    # they take half the time of the same arithmetic written as loops)
    below = list(accumulate(raw, initial=0.0))  # the mass below each cell, unnormalised
    out = []
    for level in levels:
        target = level * total
        i = min(cells - 1, max(0, bisect.bisect_left(below, target) - 1))
        out.append((i + min(1.0, max(0.0, (target - below[i]) / raw[i]))) / cells
                   if raw[i] > 0 else (i + 1) / cells)
    return Summary(mean, tuple(out))


@functools.lru_cache(maxsize=CACHED)
def beta_summary(a: float, b: float, cells: int, levels: tuple[float, ...]) -> Summary:
    """:func:`summarise` of Beta(a, b) on the grid. Reporter evidence comes in whole
    (or few) observations, so the same few thousand (a, b) recur across agents."""
    return summarise(_beta_logs(a, b, cells), levels)


def price(policy: Policy, r: float, s: float) -> float:
    """The outcome price of an agent of reliability ``r`` and candour ``s``."""
    value = policy.outcome_value
    return (s * (r * value("ACCEPTED") + (1.0 - r) * value("FAILED_DISCOVERED"))
            + (1.0 - s) * value("FAILED_ADMITTED"))


def reliability(ev: Observations, model: Posterior, levels: tuple[float, ...]) -> Summary:
    """The posterior of ``r`` from every observation."""
    a, b = model.reliability_prior
    a, b, cells = a + math.fsum(ev.right), b + math.fsum(ev.wrong), model.grid
    if not ev.verdicts:
        return beta_summary(a, b, cells, levels)
    kinds = sorted(ev.verdicts)
    weights = [math.fsum(ev.verdicts[kind]) for kind in kinds]
    # cell by cell, the verdicts' weighted logs summed in the kinds' sorted order (by
    # columns: half the time of adding one kind's vector after another)
    columns = zip(*(mixture(*kind, cells) for kind in kinds), strict=True)
    logs = [x + sum(map(operator.mul, weights, column))
            for x, column in zip(_beta_logs(a, b, cells), columns, strict=True)]
    return summarise(logs, levels)


def trust_region(ev: Observations, model: Posterior) -> tuple[float, float]:
    """Where verdicts may put ``r``: the central ``trust_band`` of the posterior of ``r``
    that the agent's reporter evidence alone gives (no verdict moves it)."""
    a, b = model.reliability_prior
    band = ((1.0 - model.trust_band) / 2, (1.0 + model.trust_band) / 2)
    low, high = beta_summary(a + math.fsum(ev.truth_right), b + math.fsum(ev.truth_wrong),
                             model.grid, band).quantiles
    return low, high


def candour(ev: Observations, model: Posterior, levels: tuple[float, ...]) -> Summary:
    """The posterior of ``s``: a Beta of the calls not admitted and those admitted."""
    a, b = model.candour_prior
    return beta_summary(a + math.fsum(ev.candid), b + math.fsum(ev.admitted), model.grid,
                        levels)


def posterior_score(terms: Sequence[Term], policy: Policy,
                    weighing: Callable[[str], Weighing]) -> Score:
    """The v4 score of an agent whose scored units gave ``terms``, already settled."""
    model = policy.posterior
    assert model is not None
    if not terms:
        return Score(None, NO_SCORED_EVIDENCE, 0.0)
    every: list[float] = []  # one weight per unit, and the same by where it came from
    by_provisional: list[float] = []
    by_vj: list[float] = []
    by_truth: list[float] = []
    for w, _, rule, n, _, prov in terms:
        copies = [w] * n
        every += copies
        if prov:
            by_provisional += copies
        if rule == 4:
            by_vj += copies
        elif rule == 1:
            by_truth += copies
    weight = math.fsum(every)
    if weight <= 0:
        return Score(None, NO_WEIGHTED_EVIDENCE, 0.0)
    provisional = math.fsum(by_provisional)
    if provisional >= weight:
        return Score(None, NO_CALIBRATED_EVIDENCE, 0.0)
    ev = observations(terms, policy, weighing)
    # each side of the interval at (1 - interval) / 2 in all, from two independent tails
    tail = 1.0 - math.sqrt(1.0 - (1.0 - model.interval) / 2)
    tails = (tail, 1.0 - tail)
    r, s = reliability(ev, model, tails), candour(ev, model, tails)
    lowest, highest = trust_region(ev, model)
    kept = min(highest, max(lowest, r.mean))
    value = price(policy, kept, s.mean)
    (r_low, r_high), (s_low, s_high) = r.quantiles, s.quantiles
    low = min(value, r_low * s_low)
    high = max(value, price(policy, r_high, s_low), price(policy, r_high, s_high))
    rnd = policy.round
    score = {"value": rnd(value), "low": rnd(low), "high": rnd(high), "weight": rnd(weight),
             "interactions": sum(t[3] for t in terms)}
    return Score(score, None, math.fsum(by_vj) / weight, math.fsum(by_truth) / weight,
                 provisional / weight)
