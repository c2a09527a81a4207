"""What an evaluator earns in an epoch: ``score = g · J`` (SPEC §8.2).

``g`` counts the evaluator's standing verdicts recorded in the epoch, not set aside
(exclusions, distrust), on interactions whose ground truth is *blind* and whose polarity
matched that truth. A verdict on an interaction without blind truth is unscoreable:
dropped, neither right nor wrong. A caller that copied a check it could read earns
nothing for it: a check is never blind.

*Blind* (SPEC §8.2 r4): nothing the evaluator could read before its verdict carried the
truth. The truth is a probe recorded after the verdict, *and* no fact of that
interaction recorded before the verdict carried a ``check`` — the caller reads that fact
in its own file. A covert re-check of a checked call (a probe after the verdict on an
interaction whose fact said ``PASS`` or ``FAIL`` already) grades nothing, whatever it
says: an evaluator that read ``check: PASS``, attested ``ACCEPTED`` and was then
re-probed was paid the whole pool before this rule (issue 35). The fact counts as
readable whether or not it was later set aside: the evaluator read it all the same.

Value judgments are verdicts on engagements, which have no ground truth in this
protocol (probes are of interactions), so none of them counts in ``g``.

``J`` is the evaluator's informedness as of the seal under the epoch's policy (the
scoring library's :class:`~bureau.scoring.evaluators.EvaluatorStats`). One reading this
module makes explicit (docs/settlement.md): an evaluator whose ratings carry no
information has ``J`` counted as 0 — the policy's constant-rater rule or its
uninformative rule holds, *or* the policy's constant-rater test on polarity holds over
its whole record whether or not it is still provisional (under v2 the weight rule looks
at provisional evaluators only; the pay rule looks at everyone). A constant "ACCEPTED"
rater's smoothed informedness is ``1/(N+2) − 1/(P+2)``, above zero whenever more of its
graded calls passed than failed; paying for that would pay for saying the same thing
every time (measured: 115 of 2,000 units in the small simulation before this rule).

Everything is a pure function of scoring inputs: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from bureau.scoring.evaluators import (
    EvaluatorRecord,
    EvaluatorStats,
    contribution,
    standing,
)
from bureau.scoring.inputs import Evidence
from bureau.scoring.policy import PolarityConstantRater, Policy
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
    checked = checked_since(evidence)
    threshold = policy.evaluators.polarity_threshold
    g: dict[str, int] = {}
    for (evaluator, _), a in standing(evidence.attestations, aside).items():
        if a is None or not lo < a.seq <= hi:
            continue
        key = (a.reporter, a.interaction, a.subject)
        if checked.get(key, hi + 1) < a.seq:
            continue  # the caller could read a check of this call: nothing here is blind
        c = contribution(a.outcome, a.corrections,
                         graded_truth(truth.get(key), a.seq, blind=True), policy)
        if c is None:
            continue  # DECLINED takes no part
        _, value, passed = c
        if passed is not None and (value >= threshold) == passed:
            g[evaluator] = g.get(evaluator, 0) + 1
    return g


def checked_since(evidence: Evidence) -> dict[tuple[str, str, str], int]:
    """Interaction -> the seq of the first fact of it that carried a ``check``: from
    there on its caller can read a verdict on it in its own file."""
    out: dict[tuple[str, str, str], int] = {}
    for f in evidence.facts:
        if f.check is not None:
            key = (f.reporter, f.interaction, f.subject)
            out[key] = min(f.seq, out.get(key, f.seq))
    return out


def one_sided(record: EvaluatorRecord | None, policy: Policy) -> bool:
    """The policy's constant-rater test on polarity, provisional or not: at least
    ``min_share`` of at least ``min_verdicts`` verdicts about at least ``min_subjects``
    subjects on one side (compared in whole percent, as the scoring library does)."""
    cr = policy.evaluators.constant_rater
    if record is None or not isinstance(cr, PolarityConstantRater):
        return False  # v1's rule has no provisional condition: stats.constant says it
    one_side = max(record.positive_verdicts, record.verdicts - record.positive_verdicts)
    return (record.verdicts >= cr.min_verdicts and record.subjects >= cr.min_subjects
            and one_side * 100 >= round(cr.min_share * 100) * record.verdicts)


def paid_informedness(stats: EvaluatorStats | None, record: EvaluatorRecord | None,
                      policy: Policy) -> float:
    """``J`` as the settlement counts it (see the module docstring)."""
    if stats is None or stats.constant or stats.uninformative or one_sided(record, policy):
        return 0.0
    return stats.informedness


class Records(Protocol):
    """Where the evaluators' records as of the seal are read (the report builder's
    :class:`~bureau.scoring.evaluators.EvaluatorBook`)."""

    @property
    def stats(self) -> Mapping[str, EvaluatorStats]: ...

    def record(self, evaluator: str) -> EvaluatorRecord | None: ...


def earnings(g: Mapping[str, int], records: Records, policy: Policy) -> list[Earned]:
    """Every evaluator with ``g > 0``, sorted by key id in byte order."""
    out = []
    for evaluator in sorted(g, key=str.encode):
        j = paid_informedness(records.stats.get(evaluator), records.record(evaluator), policy)
        out.append(Earned(evaluator, g[evaluator], j,
                          round(round(g[evaluator] * j, SCORE_DECIMALS) * SCALE)))
    return out


def scoring(earned: Iterable[Earned]) -> dict[str, int]:
    """Key id -> micro-score, for the evaluators that scored above zero."""
    return {e.evaluator: e.micro for e in earned if e.micro > 0}
