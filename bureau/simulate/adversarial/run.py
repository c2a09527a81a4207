"""Playing every attack against one bureau, under the policy that bureau scores with.

All attacks share the bureau and its epochs: each stages its parties and evidence
(concurrently), the epoch is sealed and every report read, the attacks that act after a
seal (the admin's distrust) act, the next epoch is sealed, and the final reports give
each attack's figures. Reports are fetched signed and verified; nothing is read from the
bureau's database.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bureau.scoring.policy import policy_name_of
from bureau.simulate.adversarial.arena import Arena, arena
from bureau.simulate.adversarial.attacks import ATTACKS, Attack, Staged
from bureau.simulate.driver import Target
from bureau.simulate.pay import Payroll, open_pool, payroll

#: the evaluators' pool of each epoch while the suite plays
POOL_UNITS = 1000


@dataclass(frozen=True)
class Row:
    attack: Attack
    baseline: float
    attacked: float
    #: the attacked party's figure after the first seal, when the attack acts later
    #: (the fabricated facts before the distrust)
    before_later: float | None = None

    @property
    def change(self) -> float:
        return self.attacked - self.baseline

    @property
    def held(self) -> bool:
        return self.attack.goal.holds(self.baseline, self.attacked)


@dataclass(frozen=True)
class PolicyRun:
    policy: str  # its name (v1, v2, ...), or its hash when this code does not know it
    rows: tuple[Row, ...]
    epochs: tuple[int, int]
    seconds: float
    #: the reports sealed in the first epoch of the parties an attack acted on after it
    #: (the distrust), read again after the second seal: byte for byte the same
    sealed_reports_unchanged: bool = True

    def row(self, name: str) -> Row:
        return next(r for r in self.rows if r.attack.name == name)


def _figure(report: dict[str, Any], metric: str) -> float:
    score = report["score"]
    if score is None:  # no scored evidence: read as the prior, and nothing to rank on
        return 0.5 if metric == "value" else 0.0
    value: float = score[metric]
    return value


async def _read(a: Arena, staged: Sequence[Staged], attacks: Sequence[Attack],
                pay: Payroll) -> list[tuple[float, float]]:
    async def pair(s: Staged, attack: Attack) -> tuple[float, float]:
        if s.payees is not None:  # scores in the pool, proven row by row
            paid, attacked = (round(sum(pay.scores.get(p.kid, 0.0) for p in group), 6)
                              for group in s.payees)
            return (paid if s.bound is None else s.bound), attacked
        base, hit = await asyncio.gather(a.report(s.baseline), a.report(s.attacked))
        return _figure(base, attack.metric), _figure(hit, attack.metric)

    return list(await asyncio.gather(*(pair(s, t) for s, t in zip(staged, attacks,
                                                                   strict=True))))


async def play(target: Target, attacks: Sequence[Attack] = ATTACKS) -> PolicyRun:
    """Every attack against the bureau at ``target``; see the module docstring."""
    started = time.monotonic()
    async with arena(target) as a:
        policy = policy_name_of(str(a.bureau["policy"])) or str(a.bureau["policy"])
        opened = await open_pool(a.admin, POOL_UNITS, int(a.bureau["epoch_seconds"]))
        staged = list(await asyncio.gather(*(attack.stage(a) for attack in attacks)))
        await a.settle()
        first = await a.seal()
        # The pool attacks are staged before the first seal: every epoch up to it pays.
        pay = await payroll(a.http, a.target.url, str(a.bureau["key"]),
                            range(opened, first + 1),
                            [p.key for s in staged if s.payees for g in s.payees for p in g])
        interim = await _read(a, staged, attacks, pay)
        later = [s for s in staged if s.later is not None]
        sealed = [await a.report(s.attacked, first) for s in later]
        for s in later:
            assert s.later is not None
            await s.later()
        last = await a.seal()
        final = await _read(a, staged, attacks, pay)
        unchanged = sealed == [await a.report(s.attacked, first) for s in later]
    rows = tuple(
        Row(attack, base, hit, early_hit if s.later is not None else None)
        for attack, s, (base, hit), (_, early_hit)
        in zip(attacks, staged, final, interim, strict=True))
    return PolicyRun(policy, rows, (first, last), time.monotonic() - started, unchanged)


async def play_policies(policies: Sequence[str], epoch_seconds: int = 2,
                        attacks: Sequence[Attack] = ATTACKS) -> list[PolicyRun]:
    """Each policy on a bureau of its own, started in this process (its ledger's genesis
    names the policy)."""
    from bureau.simulate.local import local_bureau

    runs = []
    for name in policies:
        async with local_bureau(epoch_seconds, policy=name) as target:
            runs.append(await play(target, attacks))
    return runs
