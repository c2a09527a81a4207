"""Who takes part: the agents behind the proxy, the evaluators who call them, the
prober, and the plan of sessions — all fixed by the seed before anything runs."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Literal

import nacl.signing

from bureau.simulate.world import (
    AGENT_KINDS,
    EVALUATOR_KINDS,
    AgentKind,
    EvaluatorKind,
    Task,
    chance,
)
from reporters import Agent, wire

#: The operator the self-dealing evaluator shares with the agent it rates (spelt
#: differently on each side: the bureau compares them normalised, bureau.intake.links).
SHADY_OPERATOR = "Shady Ops"
#: One session in this many is made by a one-off user instead of an evaluator.
USER_EVERY = 6


@dataclass(frozen=True)
class Member:
    name: str
    kind: AgentKind | EvaluatorKind
    key: nacl.signing.SigningKey

    @property
    def kid(self) -> str:
        return wire.signing_key_id(self.key)


@dataclass(frozen=True)
class Session:
    """One caller's attempt at one task, starting with one agent."""

    index: int
    caller: EvaluatorKind | Literal["user"]
    agent: int  # index into the agents
    task: Task


def agent_kinds(n: int) -> list[AgentKind]:
    """Round-robin over the four kinds, so every kind is there from four agents on."""
    return [AGENT_KINDS[i % len(AGENT_KINDS)] for i in range(n)]


def plan(seed: int, n_agents: int, sessions: int) -> list[Session]:
    kinds = agent_kinds(n_agents)
    partner = kinds.index("bluffer")
    out: list[Session] = []
    for i in range(sessions):
        slot = i % USER_EVERY
        caller: EvaluatorKind | Literal["user"] = (
            EVALUATOR_KINDS[slot] if slot < len(EVALUATOR_KINDS) else "user")
        agent = partner if caller == "self-dealing" else int(chance(seed, "agent", i) * n_agents)
        op: Literal["add", "mul"] = "mul" if chance(seed, "op", i) < 0.3 else "add"
        task = Task(f"t{i:06d}", op, int(chance(seed, "a", i) * 1000),
                    int(chance(seed, "b", i) * 1000))
        out.append(Session(i, caller, agent, task))
    return out


def next_agent(seed: int, session: Session, attempt: int, current: int,
               n_agents: int) -> int | None:
    """After an attempt that got no usable answer: the same agent again (a retry),
    another agent (a switch), or None (the caller gives up)."""
    if attempt >= 3:
        return None
    r = chance(seed, "next", session.task.id, attempt)
    if r < 0.5 or session.caller == "self-dealing":
        return current if r < 0.85 else None
    if r < 0.85:
        step = 1 + int(chance(seed, "switch", session.task.id, attempt) * (n_agents - 1))
        return (current + step) % n_agents
    return None


async def enroll_all(url: str, seed: int, n_agents: int) -> tuple[list[Member], list[Member]]:
    """Enroll the agents and the evaluators; returns (agents, evaluators)."""
    # Anchors unique per run, even on a bureau reused by --url, and each a registrable
    # domain of its own (no public suffix rule covers .example: the implicit "*" makes
    # <x>.example registrable), so that no two parties are linked by their anchors.
    tag = secrets.token_hex(3)
    agents: list[Member] = []
    counts: dict[str, int] = {}
    partner_done = False
    kind: AgentKind
    for kind in agent_kinds(n_agents):
        counts[kind] = counts.get(kind, 0) + 1
        member = Member(f"{kind}-{counts[kind]}", kind, wire.generate_key())
        operator = f"{member.name} Ltd"
        if kind == "bluffer" and not partner_done:
            operator, partner_done = SHADY_OPERATOR, True
        async with Agent(member.key, url) as a:
            await a.enroll(member.name, f"{member.name}-{tag}.example", operator,
                           {"p95-under-2s": "95% of answers within 2 s"})
        agents.append(member)
    evaluators: list[Member] = []
    ev: EvaluatorKind
    for ev in EVALUATOR_KINDS:
        member = Member(ev, ev, wire.generate_key())
        operator = f"  {SHADY_OPERATOR.lower()} " if ev == "self-dealing" else f"{ev} Co"
        async with Agent(member.key, url) as a:
            await a.enroll(f"{ev} evaluator", f"{ev}@{ev}-{tag}.example", operator)
        evaluators.append(member)
    return agents, evaluators
