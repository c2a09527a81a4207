"""Playing accuracy plans against a live bureau, through its public interfaces only:
the adversarial suite's :class:`~bureau.simulate.adversarial.arena.Arena` (a gateway
reporter spooling facts and probes, agents that enroll, attest and judge value, an
admin that seals), signed reports fetched and verified, and each agent's own file read
back with a signed ``GET /v1/agents/{agent}/entries`` (:mod:`bureau.simulate.ledger_view`).

Every plan gets parties of its own, so many plans (seeds, coverages, with and without
the attacks) share one bureau and one seal without seeing each other: an evaluator's
record is over its own verdicts, and every score is per subject. What comes back is,
per plan, the bureau's published reports and the evidence of the plan's agents, which
the measurement re-scores under every policy with :mod:`bureau.scoring` (the published
reports are the check that this is what the bureau computes).
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bureau.scoring import Evidence
from bureau.simulate import ledger_view
from bureau.simulate.accuracy.population import Plan
from bureau.simulate.adversarial.arena import Arena, Party, arena
from bureau.simulate.driver import Target


@dataclass(frozen=True)
class Played:
    plan: Plan
    #: key id of each agent, by index
    agents: tuple[str, ...]
    #: key id -> the caller label it plays
    callers: dict[str, str]
    #: the bureau's signed report of each agent (verified), by index
    reports: tuple[dict[str, Any], ...]
    evidence: Evidence
    #: the policy hash the bureau scored with
    policy: str


async def _stage(a: Arena, plan: Plan, tag: str) -> tuple[list[Party], dict[str, Party]]:
    agents = await asyncio.gather(*(a.enroll(f"acc-{tag}-agent-{s.index}")
                                    for s in plan.agents))
    parties = await asyncio.gather(*(a.enroll(f"acc-{tag}-{c.label}") for c in plan.callers))
    callers = {c.label: p for c, p in zip(plan.callers, parties, strict=True)}
    gw = a.gateway
    ids = itertools.count(1)
    sent: list[tuple[str, int]] = []  # (interaction, call index)
    engagements: list[tuple[str, int]] = []
    facts = []
    for i, call in enumerate(plan.calls):
        subject = agents[call.agent]
        if call.value is not None:
            engagements.append((await a.engagement(subject, callers[call.value[0]],
                                                   call.value[2]), i))
            continue
        ia = f"acc-{tag}-{next(ids):05d}"
        facts.append(gw.fact(ia, subject.kid, caller=callers[call.caller].kid
                             if call.caller else None, latency_ms=200, well_formed=True,
                             claimed=call.claimed, check=call.check))
        sent.append((ia, i))
    await asyncio.gather(*(gw.send(f) for f in facts))
    await a.settle()
    verdicts = []
    for ia, i in sent:
        call = plan.calls[i]
        if call.verdict is not None and call.caller is not None:
            verdicts.append((callers[call.caller], agents[call.agent], ia, *call.verdict))
    await a.attest_all(verdicts)
    judged = []
    for eid, i in engagements:
        call = plan.calls[i]
        assert call.value is not None
        buyer, judgment, spent = call.value
        judged.append(a.judge(callers[buyer], agents[call.agent], eid, spent, judgment))
    await asyncio.gather(*judged)
    # covert probes, recorded after every verdict: the blind ground truth
    await asyncio.gather(*(a.probe(agents[plan.calls[i].agent], ia,
                                   plan.calls[i].right and plan.calls[i].attempted)
                           for ia, i in sent if plan.calls[i].probed))
    return list(agents), callers


async def play(target: Target, plans: Sequence[Plan]) -> list[Played]:
    """Stage every plan on the bureau at ``target``, seal once, read everything back."""
    async with arena(target) as a:
        limit = asyncio.Semaphore(4)  # a few plans at a time: the machine is small

        async def stage(n: int, plan: Plan) -> tuple[list[Party], dict[str, Party]]:
            async with limit:
                return await _stage(a, plan, f"{n}")

        staged = await asyncio.gather(*(stage(n, p) for n, p in enumerate(plans)))
        await a.settle()
        await a.seal(max_wait=600)  # the first seal builds every report of the sweep
        out = []
        for plan, (agents, callers) in zip(plans, staged, strict=True):
            reports = await asyncio.gather(*(a.report(p) for p in agents))
            files = await asyncio.gather(*(ledger_view.read_file(a.http, a.target.url, p.key)
                                           for p in agents))
            evidence = ledger_view.evidence_of(e for f in files for e in f.entries)
            out.append(Played(plan, tuple(p.kid for p in agents),
                              {p.kid: label for label, p in callers.items()},
                              tuple(reports), evidence, str(a.bureau["policy"])))
    return out
