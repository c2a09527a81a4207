"""The simulated population: tasks with known answers, agents that serve them over
real loopback HTTP, and the evaluators' attestation policies.

Every random choice is a function of the seed and of names (task id, agent, attempt),
never of the order in which concurrent requests happen to arrive, so a seed gives the
same outcomes run after run.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

from aiohttp import web

from bureau.simulate.loopback import serving
from reporters.proxy import Exchange

AgentKind = Literal["honest", "bluffer", "flaky", "decliner"]
AGENT_KINDS: tuple[AgentKind, ...] = ("honest", "bluffer", "flaky", "decliner")
EvaluatorKind = Literal["fair", "harsh", "generous", "constant", "self-dealing"]
EVALUATOR_KINDS: tuple[EvaluatorKind, ...] = ("fair", "harsh", "generous", "constant",
                                              "self-dealing")
#: The evaluators whose verdicts carry information (right polarity, biased or not)
HONEST_EVALUATORS: tuple[EvaluatorKind, ...] = ("fair", "harsh", "generous")
#: What the caller saw of its final attempt.
Seen = Literal["correct", "wrong", "declined", "none"]

#: a bluffer answers wrongly this often, and says "ok" anyway
BLUFF_RATE = 0.6
#: a flaky agent drops the connection this often
DROP_RATE = 0.35


def chance(seed: int, *parts: object) -> float:
    """A uniform number in [0, 1) named by ``seed`` and ``parts``: deterministic."""
    digest = hashlib.sha256(json.dumps([seed, *map(str, parts)]).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


@dataclass(frozen=True)
class Task:
    id: str
    op: Literal["add", "mul"]
    a: int
    b: int

    @property
    def truth(self) -> int:
        return self.a + self.b if self.op == "add" else self.a * self.b

    def body(self) -> dict[str, Any]:
        return {"task": self.id, "op": self.op, "a": self.a, "b": self.b}


def truth_of(request_body: bytes) -> int | None:
    try:
        t = json.loads(request_body)
        return int(t["a"]) + int(t["b"]) if t["op"] == "add" else int(t["a"]) * int(t["b"])
    except (ValueError, KeyError, TypeError):
        return None


def seen(answer: Any, request_body: bytes) -> Seen:
    """Classify an agent's answer as the (omniscient) simulated caller sees it."""
    if not isinstance(answer, dict):
        return "none"
    if answer.get("status") == "declined":
        return "declined"
    return "correct" if answer.get("answer") == truth_of(request_body) else "wrong"


def deliverable_check(seed: int, share: float) -> Any:
    """The gateway's deliverable check: it checks ``share`` of the tasks (a sample chosen
    by task id) and knows the answer from the request. Everything else is left to the
    callers' attestations — which is what makes evaluators matter."""

    def check(ex: Exchange) -> Literal["PASS", "FAIL"] | None:
        try:
            task_id = json.loads(ex.request_body)["task"]
        except (ValueError, KeyError, TypeError):
            return None
        if chance(seed, "check", task_id) >= share:
            return None
        if not isinstance(ex.document, dict) or ex.document.get("status") != "ok":
            return "FAIL"  # declined or broken: nothing delivered
        return "PASS" if seen(ex.document, ex.request_body) == "correct" else "FAIL"

    return check


@dataclass
class SimAgent:
    """One agent's HTTP endpoint: ``POST /solve`` with a task, answers
    ``{"status": "ok"|"declined", "answer": int|null}``."""

    name: str
    kind: AgentKind
    seed: int
    _attempts: dict[str, int] = field(default_factory=dict)

    async def solve(self, request: web.Request) -> web.StreamResponse:
        task = await request.json()
        n = self._attempts[task["task"]] = self._attempts.get(task["task"], 0) + 1
        truth = truth_of(await request.read())
        if self.kind == "flaky" and chance(self.seed, self.name, task["task"], n) < DROP_RATE:
            assert request.transport is not None
            request.transport.close()  # no answer at all: the proxy sees the connection die
            return web.Response()
        if self.kind == "decliner" and task["op"] == "mul":
            return web.json_response({"status": "declined", "answer": None})
        if self.kind == "bluffer" and chance(self.seed, self.name, task["task"]) < BLUFF_RATE:
            assert truth is not None
            return web.json_response({"status": "ok", "answer": truth + 1})
        return web.json_response({"status": "ok", "answer": truth})

    @asynccontextmanager
    async def serve(self) -> AsyncIterator[str]:
        """Serve on 127.0.0.1, an OS-chosen port; yields the base URL."""
        app = web.Application()
        app.router.add_post("/solve", self.solve)
        async with serving(app, access_log=False) as url:
            yield url


Verdict = tuple[str, int]  # (attestation outcome, corrections)


def verdict(kind: EvaluatorKind, what: Seen) -> Verdict | None:
    """What each kind of evaluator attests, given what it saw (None: no attestation).

    * fair — the truth: ACCEPTED / FAILED_DISCOVERED / DECLINED.
    * harsh — right polarity, values pushed down: a correct answer is "accepted after
      two corrections" (0.70). Recentring lifts it back.
    * generous — right polarity, values pushed up: a wrong answer is "accepted after
      four corrections" (0.40, still below 0.5). Recentring brings it down.
    * constant — ACCEPTED whatever happened: no information; weight 0.
    * self-dealing — ACCEPTED for its own operator's agent: refused SELF_DEALING.
    """
    if what == "none":
        return None
    if kind in ("constant", "self-dealing"):
        return ("ACCEPTED", 0)
    if what == "declined":
        return ("DECLINED", 0)
    if kind == "fair":
        return ("ACCEPTED", 0) if what == "correct" else ("FAILED_DISCOVERED", 0)
    if kind == "harsh":
        return ("ACCEPTED_AFTER_CORRECTIONS", 2) if what == "correct" else ("FAILED_DISCOVERED", 0)
    return ("ACCEPTED", 0) if what == "correct" else ("ACCEPTED_AFTER_CORRECTIONS", 4)
