"""Evaluator records summed over the shards of the agents (:class:`EvaluatorBook`), and
the weighings they give: the incremental deriver's side of
:mod:`bureau.scoring.evaluators`, whose whole-ledger table the reference path uses."""

from __future__ import annotations

from collections.abc import Iterable

from bureau.scoring.evaluators import (
    EvaluatorPart,
    EvaluatorRecord,
    EvaluatorStats,
    Weighing,
    evaluator_stats,
    record_of,
)
from bureau.scoring.policy import Policy


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

    def record(self, evaluator: str) -> EvaluatorRecord | None:
        """The evaluator's whole record, summed over the shards (None: it has none)."""
        parts = [p[evaluator] for p in self._parts.values() if evaluator in p]
        return record_of(parts) if parts else None

    def update(self, reports: Iterable[tuple[int, dict[str, EvaluatorPart | None]]],
               ) -> dict[str, Weighing | None]:
        """Take (shard, its sums for the evaluators it touched) and return every
        evaluator whose :data:`Weighing` changed, with the new value (None: the evaluator
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
        changed: dict[str, Weighing | None] = {}
        for evaluator in sorted(touched):
            parts = [p[evaluator] for p in self._parts.values() if evaluator in p]
            before = self.stats.get(evaluator)
            if not parts:
                self.stats.pop(evaluator, None)
                after = None
            else:
                after = self.stats[evaluator] = evaluator_stats(evaluator, record_of(parts),
                                                                self.policy)
            weighs = None if after is None else after.weighing
            if (None if before is None else before.weighing) != weighs:
                changed[evaluator] = weighs
        return changed
