"""What a score is made of and what it is (SPEC §7, §8): the terms every scored unit
gives (:data:`Term`), and the score with the shares of its weight (:class:`Score`), or
why there is none. Both the weighted mean of v1-v3 (:mod:`bureau.scoring.score`) and
v4's posterior (:mod:`bureau.scoring.posterior`) take the one and give the other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: Why a report's score is null; the explanation carries it as ``score_reason``.
NO_SCORED_EVIDENCE = "no_scored_evidence"  # nothing resolved to a scored outcome
NO_WEIGHTED_EVIDENCE = "no_weighted_evidence"  # scored outcomes, but all at weight 0
#: v4: every scored outcome with weight came from evaluators not yet calibrated
NO_CALIBRATED_EVIDENCE = "no_calibrated_evidence"

SCORE_REASON_TEXT = {
    NO_SCORED_EVIDENCE: "no interaction resolved to a scored outcome code",
    NO_WEIGHTED_EVIDENCE: "every scored outcome came from an evaluator of weight 0",
    NO_CALIBRATED_EVIDENCE: "every scored outcome came from evaluators not yet calibrated "
                            "against ground truth",
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
