"""What each chain comes to under the evaluators' weighings of one seal (used by
:meth:`bureau.views.parts.AgentState.rescore`): which verdict decides it, with what
weight, and what it adds to the report's outcomes, unscored codes, score terms and
reporters rows. Chains name no subject, so every agent that holds one shares the answer.
"""

from __future__ import annotations

from typing import NamedTuple

from bureau.scoring.evaluators import Weighing, default_weighing
from bureau.scoring.outcomes import decide
from bureau.scoring.policy import Policy
from bureau.scoring.report import REPORTER_RULES
from bureau.views.clusters import Chain


class ChainTerm(NamedTuple):
    """The score term a decided chain gives."""

    weight: float
    value: float
    rule: int
    evaluator: str | None  # None: decided by reporter evidence
    provisional: bool


class Decided(NamedTuple):
    """What a chain comes to (see :class:`Decisions`)."""

    listed: str | None  # the code it adds to ``outcomes``
    unlisted: tuple[str, ...]  # the codes it adds to ``unscored``
    term: ChainTerm | None  # its score term
    reporter_value: tuple[str, float] | None  # (reporter, value) for the ``reporters`` rows


class Decisions:
    """What each chain comes to under the evaluators' weighings of one seal, worked out
    once for every agent that holds it (chains name no subject, so agents share them)."""

    def __init__(self, policy: Policy, weights: dict[str, Weighing]) -> None:
        self.policy = policy
        self.weights = weights
        self.default = default_weighing(policy)
        self._cache: dict[Chain, Decided] = {}

    def weighing(self, evaluator: str) -> Weighing:
        return self.weights.get(evaluator, self.default)

    def of(self, chain: Chain) -> Decided:
        got = self._cache.get(chain)
        if got is None:
            got = self._cache[chain] = self._decide(chain)
        return got

    def _decide(self, chain: Chain) -> Decided:
        verdicts, rest = chain
        index, weight, value, _, passed = decide(verdicts, self.weighing, self.policy)
        if index >= 0:
            verdict = verdicts[index]
            code, rule = verdict.code, verdict.rule
            if value is None:  # an unscored code (DECLINED): it decides, unscored
                return Decided(listed=None, unlisted=(*passed, code), term=None,
                               reporter_value=None)
            term = ChainTerm(weight=weight, value=value, rule=rule,
                             evaluator=verdict.evaluator,
                             provisional=self.weighing(verdict.evaluator).provisional)
            # a v3 admission weighed by a verdict is still the reporter's evidence
            rep = (rest.reporter, value) if rule in REPORTER_RULES else None
            # a verdict of weight 0 that still decides (v1) is listed under unscored
            if weight > 0:
                return Decided(listed=code, unlisted=passed, term=term, reporter_value=rep)
            return Decided(listed=None, unlisted=(*passed, code), term=term,
                           reporter_value=rep)
        scored = rest.scored
        listed = rest.code if rest.code is not None and scored and rest.weight > 0 else None
        unlisted = passed if rest.code is None or listed is not None else (*passed, rest.code)
        return Decided(
            listed=listed, unlisted=unlisted,
            term=ChainTerm(weight=rest.weight, value=rest.value, rule=rest.rule,
                           evaluator=None, provisional=False) if scored else None,
            reporter_value=(rest.reporter, rest.value)
            if scored and rest.rule in REPORTER_RULES else None)
