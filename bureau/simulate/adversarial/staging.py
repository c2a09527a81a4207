"""What every attack is made of (docs/simulation.md, "Adversarial"): its goal, what it
leaves to be read, the attack as data, the two targets the attacks were first measured
with, twins and callers' verdicts.

* a **bluffer** target: 10 calls whose deliverable check failed (a confident failure,
  0.00 each) and 5 unchecked calls by one-off users (observed, not scored): 0.083;
* an **honest** target: 10 passed checks and 5 unchecked calls: 0.917.

Every caller in an attack is a genuine one: the gateway reports a call of the target by
that caller before the caller attests it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

from bureau.simulate.adversarial.arena import Arena, Party
from reporters.models import AttestationOutcome


@dataclass(frozen=True)
class Goal:
    """What should hold of (baseline, attacked): ``move`` — the attack moves the score
    at most ``limit`` either way; ``below`` — the attacked party ranks strictly below
    the baseline (by ``score.low``)."""

    kind: Literal["move", "below", "at_most"]
    limit: float = 0.0

    def holds(self, baseline: float, attacked: float) -> bool:
        if self.kind == "below":
            return attacked < baseline
        if self.kind == "at_most":
            return attacked <= baseline + self.limit + 1e-9
        return abs(attacked - baseline) <= self.limit + 1e-9

    @property
    def text(self) -> str:
        if self.kind == "at_most":
            return "≤ baseline"
        return "ranks below" if self.kind == "below" else f"|Δ| ≤ {self.limit:.2f}"


@dataclass(frozen=True)
class Staged:
    """What an attack leaves to be read: whose report is the baseline, whose the attacked
    one, and what to do once the first epoch is sealed (the distrust)."""

    baseline: Party
    attacked: Party
    later: Callable[[], Awaitable[None]] | None = None
    #: for a ``pool`` attack: whose scores in the evaluators' pool (g·J, summed over
    #: each group and the settled epochs) are the baseline and whose the attacked figure
    payees: tuple[tuple[Party, ...], tuple[Party, ...]] | None = None
    #: for a ``pool`` attack: a fixed baseline instead of the first group's score
    bound: float | None = None


@dataclass(frozen=True)
class Attack:
    name: str
    #: the party attacked and what it is compared with, in a few words
    victim: str
    goal: Goal
    stage: Callable[[Arena], Awaitable[Staged]]
    #: which number is compared: of the report, or ``pool``: scores in the evaluators'
    #: pool (units are split in proportion to them within an epoch)
    metric: Literal["value", "low", "pool"] = "value"
    #: (baseline, attacked) as first measured under policy v1, where the issue gives them
    v1: tuple[float, float] | None = None


# --------------------------------------------------------------------------- targets


async def bluffer(a: Arena, label: str) -> Party:
    party = await a.enroll(label)
    await a.calls(party, 10, check="FAIL")
    await a.calls(party, 5)
    return party


async def honest(a: Arena, label: str) -> Party:
    party = await a.enroll(label)
    await a.calls(party, 10, check="PASS")
    await a.calls(party, 5)
    return party


Maker = Callable[[Arena, str], Awaitable[Party]]


async def twins(a: Arena, make: Maker, label: str) -> tuple[Party, Party]:
    """(control, target): two identical parties; only the second will be attacked."""
    control = await make(a, f"{label}-control")
    return control, await make(a, label)


@dataclass(frozen=True)
class Verdicts:
    """One rater's verdicts on a subject: ``calls`` unchecked calls, each attested
    ``outcome`` (after ``corrections``)."""

    calls: int
    outcome: AttestationOutcome
    corrections: int = 0


async def rate(a: Arena, raters: list[Party], subject: Party, verdicts: Verdicts) -> None:
    """Each rater calls ``subject`` (calls the gateway reports) and attests each call,
    as ``verdicts`` says."""
    calls = [(r, await a.calls(subject, verdicts.calls, caller=r)) for r in raters]
    await a.settle()
    await a.attest_all((r, subject, ia, verdicts.outcome, verdicts.corrections)
                       for r, ids in calls for ia in ids)
