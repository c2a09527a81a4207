"""A2A tasks the proxy has seen start and not yet end (pure; the clock is injected).

One A2A task is one interaction, however many calls it takes: the send that starts it,
the sends that continue it (same task id), the ``tasks/get`` polls, a resubscription, a
cancel. Its fact is held (reporters.proxy.holding) from the first answer and rewritten
at every turn; it is decided by the task's last state:

* a final state (``completed``, ``failed``, ``rejected``, ``canceled``) ends it at once;
* a task left waiting for the caller (``input-required``/``auth-required``) that sees no
  turn for ``quiet`` seconds ends ``derived: ABANDONED``;
* a task left running (``submitted``/``working``) that sees no turn for ``quiet``
  seconds ends with what is known: no claim, no derived (the caller may be told by a
  push notification the proxy does not carry).

A task is its caller's: it is found by agent, caller *and* task id (SPEC §4, r4, "Tasks
are told apart by caller as well as by task id"), so another caller polling or
cancelling it is not a turn of it, and cannot end it (for unsigned callers, whom the
proxy cannot tell apart, the caller is ``None`` for all). ``started`` is when its first
call went upstream: a task's ``latency_ms`` runs from there to the answer in which the
proxy first saw its final state.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from reporters.proxy.tracker import Settled


@dataclass(slots=True)
class OpenTask:
    interaction: str
    agent: str
    caller: str | None
    task_id: str | None  # None until the first answer names it (a stream's first event)
    state: int | None
    at: float  # the clock at the task's last turn
    started: float  # the clock when the task's first call went upstream
    #: the skill the task's first call named that the agent's card does not list
    unlisted_skill: str | None = None


class TaskTurn(NamedTuple):
    """What a turn showed of its task: its id and latest state (None: not shown), and
    the skill its first call named that the card does not list (reporters.proxy.a2a_calls:
    a task that then fails was refused, not failed)."""

    task_id: str | None
    state: int | None
    unlisted_skill: str | None = None


#: what a task is found by: agent, caller, task id
TaskKey = tuple[str, str | None, str]


class OpenTasks:
    def __init__(self, clock: Callable[[], float], quiet: float) -> None:
        self._clock = clock
        self.quiet = quiet
        self._by_interaction: dict[str, OpenTask] = {}
        self._by_task: dict[TaskKey, str] = {}
        #: interaction -> the clock when its first call went upstream, until it opens
        self._starts: dict[str, float] = {}

    def __len__(self) -> int:
        return len(self._by_interaction)

    def find(self, agent: str, caller: str | None, task_id: str | None) -> OpenTask | None:
        if task_id is None:
            return None
        interaction = self._by_task.get((agent, caller, task_id))
        return None if interaction is None else self._by_interaction[interaction]

    def get(self, interaction: str) -> OpenTask | None:
        return self._by_interaction.get(interaction)

    def begin(self, interaction: str, started: float) -> None:
        """The first call of a task that may open is going upstream now (``started``,
        on the clock): when it opens, this is its start."""
        self._starts[interaction] = started

    def started(self, interaction: str) -> float | None:
        """When the task of ``interaction`` began, on the clock (None: not known)."""
        task = self._by_interaction.get(interaction)
        return task.started if task is not None else self._starts.get(interaction)

    def turn(self, interaction: str, who: tuple[str, str | None], seen: TaskTurn,
             at: tuple[float, float] | None = None) -> OpenTask:
        """Open the task of ``interaction`` for ``who`` (agent, caller), or record its
        latest turn; ``at`` is (last turn, start) on the clock (default: now)."""
        agent, caller = who
        task_id, state = seen.task_id, seen.state
        now = self._clock()
        last, started = at if at is not None else (now, self._starts.pop(interaction, now))
        task = self._by_interaction.get(interaction)
        if task is None:
            task = self._by_interaction[interaction] = OpenTask(
                interaction, agent, caller, None, None, last, started, seen.unlisted_skill)
        if task_id is not None and task.task_id is None:
            task.task_id = task_id
            self._by_task[(agent, caller, task_id)] = interaction
        if state is not None:
            task.state = state
        task.at = last
        return task

    def close(self, interaction: str) -> OpenTask | None:
        self._starts.pop(interaction, None)
        task = self._by_interaction.pop(interaction, None)
        if task is not None and task.task_id is not None:
            self._by_task.pop((task.agent, task.caller, task.task_id), None)
        return task

    def due(self) -> list[Settled]:
        """Tasks quiet for ``quiet`` seconds: they end now (see the module docstring)."""
        if not self._by_interaction:
            return []
        from reporters.protocols.a2a import WAITING  # tasks exist: the a2a extra is there

        now = self._clock()
        out = []
        for interaction, task in list(self._by_interaction.items()):
            if now - task.at >= self.quiet:
                self.close(interaction)
                out.append(Settled(interaction,
                                   "ABANDONED" if task.state in WAITING else None))
        return out

    def drain(self) -> list[Settled]:
        """Shutdown: every open task ends with what is known (not watched long enough
        to call it abandoned)."""
        out = [Settled(i, None) for i in self._by_interaction]
        self._by_interaction.clear()
        self._by_task.clear()
        self._starts.clear()
        return out
