"""An agent's entries in clusters, and what a cluster's units resolved to (used by
:mod:`bureau.views.derive` and :mod:`bureau.views.parts`).

An agent's entries fall into clusters that never influence each other: everything about
one ``(reporter, interaction, subject)``, or about every interaction of one engagement.
A re-resolved cluster keeps what its units came to: a :class:`Fixed` for each unit
reporter evidence decided (rules 1-2, 5-8), a :class:`Chain` for each an evaluator's
verdict may decide (rules 3-4), worked out at rescore (:mod:`bureau.views.decisions`).
Both repeat endlessly across a ledger, so each distinct one is kept once (:func:`shared`).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from bureau.scoring.inputs import Attestation, Fact, Probe, ValueJudgment
from bureau.scoring.outcomes import Resolution, Verdict

ClusterKey = tuple[str, str, str, str]  # ("i"|"e", reporter, interaction|engagement, subject)


class Fixed(NamedTuple):
    """What a resolution by reporter evidence (rules 1-2, 5-8) adds to the report.
    There are a few hundred distinct ones, so they are shared instead of keeping
    ~0.2 KiB of Resolution and Unit per interaction."""

    code: str | None
    scored: bool
    weight: float
    value: float
    rule: int
    reporter: str


class Chain(NamedTuple):
    """A unit that an evaluator's verdict may decide (rules 3-4). Which verdict decides,
    and with what weight, follows the evaluators' current weighings, so it is worked out
    at rescore."""

    verdicts: tuple[Verdict, ...]  # its candidate verdicts, in rule order
    rest: Fixed  # what decides it if no verdict does (rules 5-8)


_SHARED: dict[tuple[Any, ...], Any] = {}


def shared(value: Any) -> Any:
    """One shared copy of an immutable value that repeats endlessly."""
    return _SHARED.setdefault(value, value)


def fixed_of(r: Resolution) -> Fixed:
    f = Fixed(code=r.code, scored=r.scored, weight=r.weight,
              value=r.value if r.value is not None else 0.0, rule=r.rule,
              reporter=r.unit.reporter)
    return shared(f)  # type: ignore[no-any-return]


Evidential = Fact | Probe | Attestation | ValueJudgment


class Cluster:
    """Entries about one interaction (or one engagement) of one agent: nothing outside
    a cluster changes how its units resolve."""

    __slots__ = ("atts", "chains", "counted_facts", "counted_probes", "distrusted", "facts",
                 "fixed", "probes", "vjs")

    def __init__(self) -> None:
        self.facts: tuple[Fact, ...] = ()
        self.probes: tuple[Probe, ...] = ()
        self.atts: tuple[Attestation, ...] = ()
        self.vjs: tuple[ValueJudgment, ...] = ()
        # what its units resolved to, last time
        self.fixed: tuple[Fixed, ...] = ()
        self.chains: tuple[Chain, ...] = ()
        # what the agent's counters hold of this cluster: its counted facts and probes
        # as of its last resolution (the same tuples when none is set aside), and how
        # many of its entries distrust set aside
        self.counted_facts: tuple[Fact, ...] = ()
        self.counted_probes: tuple[Probe, ...] = ()
        self.distrusted = 0

    def add(self, item: Evidential) -> None:
        if isinstance(item, Fact):
            self.facts += (item,)
        elif isinstance(item, Probe):
            self.probes += (item,)
        elif isinstance(item, Attestation):
            self.atts += (item,)
        else:
            self.vjs += (item,)

    def absorb(self, other: Cluster) -> None:
        for group in (other.facts, other.probes, other.atts, other.vjs):
            for item in group:
                self.add(item)

    @property
    def counted(self) -> bool:
        """Whether the agent's counters hold anything of this cluster."""
        return bool(self.fixed or self.chains or self.counted_facts or self.counted_probes
                    or self.distrusted)
