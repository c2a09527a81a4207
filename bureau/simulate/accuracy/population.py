"""The accuracy population (issue 23): agents of known true quality, honest callers
who see the work with some noise, the attack catalogue's adversaries, and a seeded plan
of every call, check, probe and verdict. Pure: the same options and seed give the same
plan, whoever plays it.

* **Agents.** ``agents`` of them (an even number), in pairs of the same true quality
  ``q`` (the probability of a right answer on a task it attempts), the pairs evenly
  from 0.05 to 0.95. One of each pair *bluffs* (a wrong answer is presented as a
  success: ``claimed: SUCCESS``), the other *admits* (``claimed: FAILURE``); every
  second admitter is also a *decliner*, which declines a share of its tasks (``claimed: DECLINED``,
  free) and admits its failures on the rest.
* **Honest callers.** Each call has a caller drawn from them; the caller perceives the
  answer's rightness with ``noise`` chance of getting it wrong, and attests in its
  manner: fair (``ACCEPTED`` / ``FAILED_DISCOVERED``), harsh
  (``ACCEPTED_AFTER_CORRECTIONS`` with 1 correction / ``FAILED_DISCOVERED``) or generous
  (``ACCEPTED`` / ``FAILED_ADMITTED``). On an admitted failure it attests
  ``FAILED_ADMITTED``, on a decline ``DECLINED`` — what the agent said.
* **Ground truth.** Each call carries the gateway's deliverable check with chance
  ``coverage`` (seen in the caller's file before it attests), and is re-tested by a
  covert probe recorded after the verdicts with chance ``probes`` (blind).
* **Adversaries** (``attacks=True``), the attack catalogue's (docs/simulation.md) on
  this population: a sybil ring of fresh keys, each calling each of the worst agents
  once and attesting ``ACCEPTED`` (too few verdicts each for the constant-rater rule);
  a smaller ring attesting the best agents' calls ``FAILED_DISCOVERED``; calibrated
  liars that read the check in their file, truthful where it is shown and ``ACCEPTED``
  elsewhere, on the worst agents; a constant rater (``ACCEPTED`` on everything, one
  verdict varied) over the worst agents; and buyers flooding the worst agents with
  ``VALUE_OK`` on engagements that spent nothing.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from reporters.models import AttestationOutcome

Style = Literal["bluff", "admit", "decline"]
Manner = Literal["fair", "harsh", "generous"]
#: who a verdict comes from: an honest caller, or one adversary kind
Claim = Literal["SUCCESS", "FAILURE", "DECLINED"]
Check = Literal["PASS", "FAIL"] | None
Role = Literal["honest", "sybil_up", "sybil_down", "check_reader", "constant", "buyer",
               "ring_checks", "ring_probes"]


@dataclass(frozen=True)
class Options:
    agents: int = 24
    #: honest calls per agent
    calls: int = 40
    #: share of calls with a deliverable check (seen by the caller before it attests)
    coverage: float = 0.05
    #: share of calls re-tested by a covert probe after the verdicts (blind)
    probes: float = 0.01
    honest_callers: int = 8
    harsh: int = 2
    generous: int = 2
    #: chance that an honest caller perceives a right answer as wrong or vice versa
    noise: float = 0.10
    #: share of tasks a decliner declines
    decline_share: float = 0.25
    attacks: bool = True
    #: sybil ring: keys, worst agents targeted, calls by each key on each target
    sybils: int = 6
    sybil_targets: int = 6
    sybil_calls: int = 1
    #: calls by each calibrated liar (check reader) and each down-ring key on each target
    liar_calls: int = 3
    #: thin-record rings (issue 31), calibrated on checks and on probes, up and down:
    #: members of each, calls each makes of the other agents first (right where it can
    #: be graded), targets each ring lies about, lies per member per target
    ring_members: int = 2
    ring_calls: int = 60
    ring_targets: int = 3
    ring_lies: int = 3
    seed: int = 1


@dataclass(frozen=True)
class AgentSpec:
    index: int
    quality: float
    style: Style

    @property
    def admits(self) -> bool:
        """Honest about its failures (the admitting half: admitters and decliners)."""
        return self.style != "bluff"


@dataclass(frozen=True)
class CallerSpec:
    label: str
    role: Role
    manner: Manner = "fair"


@dataclass(frozen=True)
class Call:
    """One call of an agent and all that follows from it."""

    agent: int
    caller: str | None  # a CallerSpec label; None for an engagement's one-off buyer
    right: bool  # the answer was right (meaningless when declined)
    claimed: Claim
    check: Check
    probed: bool
    #: the caller's verdict: (outcome, corrections), or None (no attestation)
    verdict: tuple[AttestationOutcome, int] | None
    #: engagements only: (buyer label, judgment, spent)
    value: tuple[str, Literal["VALUE_OK", "VALUE_POOR"], int] | None = None

    @property
    def attempted(self) -> bool:
        return self.claimed != "DECLINED"


@dataclass(frozen=True)
class Plan:
    options: Options
    agents: tuple[AgentSpec, ...]
    callers: tuple[CallerSpec, ...]
    calls: tuple[Call, ...] = field(repr=False)

    def realised(self, agent: int) -> float | None:
        """The agent's realised share of right answers over every call it attempted:
        what a perfect judge of these very calls would say (the sampling ceiling)."""
        tried = [c for c in self.calls if c.agent == agent and c.attempted
                 and c.value is None]
        return sum(c.right for c in tried) / len(tried) if tried else None


def qualities(n: int) -> list[float]:
    """``n // 2`` levels evenly from 0.05 to 0.95, each held by two agents."""
    levels = n // 2
    return [round(0.05 + 0.90 * (i // 2) / (levels - 1), 6) for i in range(2 * levels)]


def agent_specs(n: int) -> tuple[AgentSpec, ...]:
    """Pairs of the same true quality, one bluffing and one honest about its failures
    (every second honest one a decliner): the honesty gap compares like with like."""
    specs = []
    for i, q in enumerate(qualities(n)):
        style: Style = "bluff" if i % 2 == 0 else ("decline" if i % 4 == 3 else "admit")
        specs.append(AgentSpec(i, q, style))
    return tuple(specs)


def honest_callers(o: Options) -> list[CallerSpec]:
    out = []
    for i in range(o.honest_callers):
        manner: Manner = ("harsh" if i < o.harsh else
                          "generous" if i < o.harsh + o.generous else "fair")
        out.append(CallerSpec(f"caller-{i}-{manner}", "honest", manner))
    return out


def honest_verdict(manner: Manner, perceived_right: bool) -> tuple[AttestationOutcome, int]:
    if perceived_right:
        return ("ACCEPTED_AFTER_CORRECTIONS", 1) if manner == "harsh" else ("ACCEPTED", 0)
    return ("FAILED_ADMITTED", 0) if manner == "generous" else ("FAILED_DISCOVERED", 0)


def _call(rnd: random.Random, o: Options, agent: AgentSpec
          ) -> tuple[bool, Claim, Check, bool]:
    """(right, claimed, check, probed) of one call: the draws every call makes, in one
    order, whoever the caller."""
    declines = rnd.random()  # drawn by every agent: the streams of a pair stay aligned
    declined = agent.style == "decline" and declines < o.decline_share
    right = rnd.random() < agent.quality
    claimed: Claim = ("DECLINED" if declined else
                      "SUCCESS" if right or agent.style == "bluff" else "FAILURE")
    checked = rnd.random() < o.coverage
    probed = rnd.random() < o.probes
    check: Check = None if not checked else ("PASS" if right and not declined else "FAIL")
    return right, claimed, check, probed


def plan(o: Options) -> Plan:
    rnd = random.Random(f"accuracy-{o.seed}")
    agents = agent_specs(o.agents)
    callers = honest_callers(o)
    calls: list[Call] = []

    def add(agent: AgentSpec, caller: CallerSpec, decide: str,
            draws: random.Random = rnd) -> None:
        right, claimed, check, probed = _call(draws, o, agent)
        noisy = draws.random() < o.noise
        if claimed == "DECLINED":
            verdict: tuple[AttestationOutcome, int] | None = ("DECLINED", 0)
        elif claimed == "FAILURE" and decide in ("honest", "reads", "knows"):
            verdict = ("FAILED_ADMITTED", 0)
        elif decide == "honest":
            verdict = honest_verdict(caller.manner, right != noisy)
        elif decide in ("reads", "knows"):  # a ring earning its record, right where graded
            seen = (check == "PASS" if check is not None
                    else right if decide == "knows" else right != noisy)
            verdict = ("ACCEPTED", 0) if seen else ("FAILED_DISCOVERED", 0)
        elif decide == "up":
            verdict = ("ACCEPTED", 0)
        elif decide == "down":
            verdict = ("FAILED_DISCOVERED", 0)
        else:  # check_reader: truthful where the check shows, ACCEPTED elsewhere
            verdict = (("ACCEPTED", 0) if check != "FAIL" else ("FAILED_DISCOVERED", 0))
        calls.append(Call(agent.index, caller.label, right, claimed, check, probed, verdict))

    for agent in agents:
        # both agents of a pair draw the same calls: the same callers, right answers,
        # checks, probes and noise; only what they claim differs (common random numbers)
        pair = random.Random(f"accuracy-{o.seed}-pair-{agent.index // 2}")
        for _ in range(o.calls):
            add(agent, pair.choice(callers), "honest", pair)
    if o.attacks:
        callers = [*callers, *_attackers(o, agents, rnd, add, calls.append)]
    return Plan(o, agents, tuple(callers), tuple(calls))


def _attackers(o: Options, agents: tuple[AgentSpec, ...], rnd: random.Random,
               add: Callable[[AgentSpec, CallerSpec, str, random.Random], None],
               record: Callable[[Call], None]) -> list[CallerSpec]:
    """The attackers of the mix and their calls, in the order they are drawn: a sybil
    ring lifting the worst agents, liars sinking the best, check readers, a constant
    rater, buyers judging value, and the rings that earn a record first."""
    worst = agents[:o.sybil_targets]
    best = agents[-max(1, o.sybil_targets // 2):]
    ring = [CallerSpec(f"sybil-up-{i}", "sybil_up") for i in range(o.sybils)]
    down = [CallerSpec(f"sybil-down-{i}", "sybil_down")
            for i in range(max(1, o.sybils // 2))]
    readers = [CallerSpec(f"check-reader-{i}", "check_reader") for i in range(2)]
    constant = CallerSpec("constant-rater", "constant")
    buyers = [CallerSpec(f"buyer-{i}", "buyer") for i in range(2)]
    for member in ring:
        for agent in worst:
            for _ in range(o.sybil_calls):
                add(agent, member, "up", rnd)
    for member in down:
        for agent in best:
            for _ in range(o.liar_calls):
                add(agent, member, "down", rnd)
    for member in readers:
        for agent in worst:
            for _ in range(o.liar_calls):
                add(agent, member, "reader", rnd)
    for n, agent in enumerate(worst[:4]):
        for k in range(4):  # 16 verdicts over 4 subjects, one of them varied
            right, claimed, check, probed = _call(rnd, o, agent)
            varied = n == 0 and k == 0
            verdict: tuple[AttestationOutcome, int] = (
                ("ACCEPTED_AFTER_CORRECTIONS", 1) if varied else ("ACCEPTED", 0))
            record(Call(agent.index, constant.label, right, claimed, check, probed, verdict))
    for buyer in buyers:
        for agent in worst[:3]:
            for _ in range(5):
                record(Call(agent.index, buyer.label, False, "SUCCESS", None, False, None,
                            (buyer.label, "VALUE_OK", 0)))
    return [*ring, *down, *readers, constant, *buyers,
            *_thin_record_rings(o, agents, rnd, add)]


def _thin_record_rings(o: Options, agents: tuple[AgentSpec, ...], rnd: random.Random,
                       add: Callable[[AgentSpec, CallerSpec, str, random.Random], None],
                       ) -> list[CallerSpec]:
    """Rings that earn a record before they lie about agents with a short checked
    record (issue 31; at the low coverages every agent has one): each member first
    calls ``ring_calls`` other agents and is right wherever it can be graded — reading
    the check in its file (``ring_checks``), or right on every call, so on the covert
    probes too (``ring_probes``) — then attests ``ring_lies`` calls of each target
    ``ACCEPTED`` (up: the worst agents after the sybil ring's) or ``FAILED_DISCOVERED``
    (down: the best)."""
    up = agents[o.sybil_targets:o.sybil_targets + o.ring_targets]
    down = agents[-o.ring_targets:]
    members = []
    kinds: tuple[tuple[Role, str], ...] = (("ring_checks", "reads"), ("ring_probes", "knows"))
    for role, decide in kinds:
        for direction, targets in (("up", up), ("down", down)):
            for i in range(o.ring_members):
                member = CallerSpec(f"{role.replace('_', '-')}-{direction}-{i}", role)
                others = [a for a in agents if a not in targets]
                for _ in range(o.ring_calls):
                    add(rnd.choice(others), member, decide, rnd)
                for agent in targets:
                    for _ in range(o.ring_lies):
                        add(agent, member, direction, rnd)
                members.append(member)
    return members
