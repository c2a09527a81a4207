"""What each evaluator's verdicts add to its record, kept by the incremental deriver
(:mod:`bureau.views.derive`) one ``(evaluator, interaction)`` at a time, so that a new
verdict, a new ground truth or an exclusion swaps one contribution in its evaluator's
sums (:class:`~bureau.scoring.evaluators.EvaluatorSums`).

Under v4 a subject rates its evaluators only once it is *established*
(:func:`bureau.scoring.rates.established`: enough distinct evaluators have rated
verdicts about it). Which evaluators those are is known where the subject's clusters
are, so this keeps, per subject, how many rated verdicts each evaluator has there; when
a subject becomes established (or stops being), the rated verdicts about it join (or
leave) every one of its raters' sums. The reference path
(:func:`bureau.scoring.evaluators.evaluator_table`) counts the same raters over the
whole ledger; ``tests/views/test_derive_equivalence.py`` holds the two equal.
"""

from __future__ import annotations

from collections import Counter

from bureau.scoring.evaluators import Contribution, EvaluatorPart, EvaluatorSums
from bureau.scoring.policy import Policy
from bureau.scoring.rates import established

#: (evaluator, what it judged: an interaction key, or ("e", engagement key ...))
VerdictKey = tuple[str, tuple[str, ...]]


class Contributions:
    """Every standing verdict's contribution, the sums they make per evaluator, and (v4)
    the raters of each subject."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self._threshold = policy.evaluators.polarity_threshold
        self._sums: dict[str, EvaluatorSums] = {}
        #: evaluator -> what it judged -> what its verdict there adds to its record
        self._by: dict[str, dict[tuple[str, ...], Contribution]] = {}
        #: subject -> evaluator -> its rated verdicts about the subject (v4)
        self._raters: dict[str, Counter[str]] = {}
        self._established: set[str] = set()
        self._touched: set[str] = set()  # evaluators whose sums changed

    def swap(self, new: dict[VerdictKey, Contribution | None]) -> None:
        """Put in each verdict's contribution (None: it has none any more), taking out
        the one it replaces; the evaluators whose sums move are marked touched."""
        for (evaluator, key), c in new.items():
            mine = self._by.get(evaluator)
            if mine is None:
                mine = self._by[evaluator] = {}
            old = mine.get(key)
            if old == c:
                continue
            acc = self._sums.get(evaluator)
            if acc is None:
                acc = self._sums[evaluator] = EvaluatorSums()
            subject = key[-1]
            if old is not None:
                self._apply(acc, evaluator, old, subject, -1)
                del mine[key]
            if c is not None:
                self._apply(acc, evaluator, c, subject, +1)
                mine[key] = c
            self._touched.add(evaluator)

    def _apply(self, acc: EvaluatorSums, evaluator: str, c: Contribution, subject: str,
               sign: int) -> None:
        acc.apply(c, subject, sign, self._threshold, subject in self._established)
        if c[3] is None:
            return
        raters = self._raters.setdefault(subject, Counter())
        raters[evaluator] += sign
        if not raters[evaluator]:
            del raters[evaluator]
            if not raters:
                del self._raters[subject]

    def settle(self, subject: str) -> None:
        """After a subject's verdicts were swapped: if it became established (or stopped
        being), its rated verdicts join (or leave) its raters' sums."""
        raters = self._raters.get(subject, Counter())
        now = established(len(raters), self.policy)
        if now == (subject in self._established):
            return
        if now:
            self._established.add(subject)
        else:
            self._established.discard(subject)
        for evaluator in raters:
            self._sums[evaluator].rated.establish(subject, now)
            self._touched.add(evaluator)

    def parts(self) -> dict[str, EvaluatorPart | None]:
        """The sums of every evaluator touched since the last call (None: it has no
        verdict left here)."""
        touched, self._touched = self._touched, set()
        out: dict[str, EvaluatorPart | None] = {}
        for evaluator in touched:
            acc = self._sums[evaluator]
            if acc.verdicts == 0:
                del self._sums[evaluator]
                out[evaluator] = None
            else:
                out[evaluator] = acc.part()
        return out
