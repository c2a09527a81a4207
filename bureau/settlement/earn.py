"""What an evaluator earns in an epoch: ``score = g · J`` (SPEC §8.2).

``g`` counts the evaluator's standing verdicts recorded in the epoch, not set aside
(exclusions, distrust), on interactions whose ground truth is *blind* — a probe recorded
after the verdict, under every policy (§7.1 rule 1) — and whose polarity matched that
truth. A verdict on an interaction without blind truth is unscoreable: dropped, neither
right nor wrong. A caller that copied a check it could read earns nothing for it: a
check is never blind. Value judgments are verdicts on engagements, which have no ground
truth in this protocol (probes are of interactions), so none of them counts in ``g``.

``J`` is the evaluator's informedness as of the seal under the epoch's policy (the
scoring library's :class:`~bureau.scoring.evaluators.EvaluatorStats`). One reading this
module makes explicit: an evaluator whose weight the policy sets to zero because its
ratings carry no information (the constant-rater rule, or ``J = 0`` over enough graded
verdicts) has ``J`` counted as 0. A constant "ACCEPTED" rater's smoothed informedness is
``1/(N+2) − 1/(P+2)``, a little above zero whenever more of its calls passed than failed;
paying for that would pay for saying the same thing every time.

Everything is a pure function of scoring inputs: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from bureau.scoring.evaluators import EvaluatorStats, contribution, standing
from bureau.scoring.inputs import Evidence
from bureau.scoring.policy import Policy
from bureau.scoring.truth import graded_truth, set_aside, truth_index

#: Scores are rounded to this many decimals and split as integers of 10^-6.
SCORE_DECIMALS = 6
SCALE = 10**SCORE_DECIMALS


@dataclass(frozen=True, slots=True)
class Earned:
    """One evaluator's score in an epoch."""

    evaluator: str
    graded: int  # g: verdicts that matched blind ground truth
    informedness: float  # J as the settlement counts it
    micro: int  # round(g · J, 6) · 10^6

    @property
    def score(self) -> float:
        return float(self.micro / SCALE)


def matched_blind(evidence: Evidence, policy: Policy, lo: int, hi: int) -> dict[str, int]:
    """``g`` per evaluator: its standing attestations with ``lo < seq <= hi`` (recorded in
    the epoch) that blind ground truth, as the entries up to ``hi`` give it, agrees with.
    ``evidence`` holds at least those attestations, the facts and probes of their
    interactions, and every exclusion and reporter update up to ``hi``."""
    aside = set_aside(evidence)
    truth = truth_index(evidence.facts, evidence.probes, aside)
    threshold = policy.evaluators.polarity_threshold
    g: dict[str, int] = {}
    for (evaluator, _), a in standing(evidence.attestations, aside).items():
        if a is None or not lo < a.seq <= hi:
            continue
        key = (a.reporter, a.interaction, a.subject)
        c = contribution(a.outcome, a.corrections,
                         graded_truth(truth.get(key), a.seq, blind=True), policy)
        if c is None:
            continue  # DECLINED takes no part
        _, value, passed = c
        if passed is not None and (value >= threshold) == passed:
            g[evaluator] = g.get(evaluator, 0) + 1
    return g


def paid_informedness(stats: EvaluatorStats | None) -> float:
    """``J`` as the settlement counts it (see the module docstring)."""
    if stats is None or stats.constant or stats.uninformative:
        return 0.0
    return stats.informedness


def earnings(g: Mapping[str, int], stats: Mapping[str, EvaluatorStats]) -> list[Earned]:
    """Every evaluator with ``g > 0``, sorted by key id in byte order."""
    out = []
    for evaluator in sorted(g, key=str.encode):
        j = paid_informedness(stats.get(evaluator))
        out.append(Earned(evaluator, g[evaluator], j,
                          round(round(g[evaluator] * j, SCORE_DECIMALS) * SCALE)))
    return out


def scoring(earned: Iterable[Earned]) -> dict[str, int]:
    """Key id -> micro-score, for the evaluators that scored above zero."""
    return {e.evaluator: e.micro for e in earned if e.micro > 0}
