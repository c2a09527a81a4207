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
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from reporters.proxy.tracker import Settled


@dataclass(slots=True)
class OpenTask:
    interaction: str
    agent: str
    task_id: str | None  # None until the first answer names it (a stream's first event)
    state: int | None
    at: float  # the clock at the task's last turn


class OpenTasks:
    def __init__(self, clock: Callable[[], float], quiet: float) -> None:
        self._clock = clock
        self.quiet = quiet
        self._by_interaction: dict[str, OpenTask] = {}
        self._by_task: dict[tuple[str, str], str] = {}

    def __len__(self) -> int:
        return len(self._by_interaction)

    def find(self, agent: str, task_id: str | None) -> OpenTask | None:
        if task_id is None:
            return None
        interaction = self._by_task.get((agent, task_id))
        return None if interaction is None else self._by_interaction[interaction]

    def get(self, interaction: str) -> OpenTask | None:
        return self._by_interaction.get(interaction)

    def turn(self, interaction: str, agent: str, task_id: str | None, state: int | None,
             at: float | None = None) -> OpenTask:
        """Open the task of ``interaction``, or record its latest turn."""
        task = self._by_interaction.get(interaction)
        if task is None:
            task = self._by_interaction[interaction] = OpenTask(interaction, agent, None,
                                                                None, 0.0)
        if task_id is not None and task.task_id is None:
            task.task_id = task_id
            self._by_task[(agent, task_id)] = interaction
        if state is not None:
            task.state = state
        task.at = self._clock() if at is None else at
        return task

    def close(self, interaction: str) -> OpenTask | None:
        task = self._by_interaction.pop(interaction, None)
        if task is not None and task.task_id is not None:
            self._by_task.pop((task.agent, task.task_id), None)
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
        return out
