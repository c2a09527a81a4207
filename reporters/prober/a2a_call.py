"""Sending a task over A2A with a2a-sdk's client, and reading the task's final state.

Imported only for a route with ``protocol = "a2a"`` (the ``a2a`` extra). The task goes
as an ordinary ``message/send`` (``SendMessage`` for an agent whose card offers A2A 1.0):
one user message with one text part, a fresh message id, no context, no metadata. The
client is made from the agent's card, fetched from the route's ``upstream`` once and
again after a call that could not reach the agent.

What the answer means (docs/probing.md, "What is recorded", SPEC §4 r3; the states and
error codes are reporters.protocols.a2a's, shared with the proxy):

* a task ``completed`` claims ``SUCCESS``; its reply is the text of its artifacts (their
  text parts, and data parts as JSON), else of its status message, else of the agent's
  last message in its history. A plain message answer is a reply claiming nothing.
* ``rejected`` is ``DECLINED``; ``failed`` claims ``FAILURE`` (a failed probe, admitted);
  ``canceled`` claims nothing (a failed probe).
* ``input-required``/``auth-required``: the prober does not carry a conversation on, so it
  leaves the task: ``derived: ABANDONED``, no probe. A task still ``submitted``/``working``
  is polled with ``GetTask`` until the route's timeout, then cancelled and left the same
  way.
* a JSON-RPC error answer: one that blames the request (parse error, invalid request or
  params, method not found, an unsupported operation, content type, version or
  extension) is the agent declining; any other is the agent failing (``FAILURE``).
* an answer that is not valid for the method (not JSON-RPC, not a task or message, an
  HTTP error status) is ``well_formed: false`` and a failed probe; no answer at all
  (refused, dropped, timed out, no agent card to be read) is ``answered: false``.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from typing import Any

import httpx
from a2a.client import (
    A2AClientError,
    A2AClientTimeoutError,
    AgentCardResolutionError,
    Client,
    ClientConfig,
    ClientFactory,
)
from a2a.client.card_resolver import A2ACardResolver
from a2a.helpers import get_data_parts, get_text_parts
from a2a.types.a2a_pb2 import (
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskState,
)
from a2a.utils.errors import JSON_RPC_ERROR_CODE_MAP, A2AError

from reporters.prober.config import Route
from reporters.prober.outcome import Asked
from reporters.protocols.a2a import STATE_CLAIMS, error_claim


def _parts_text(parts: Any) -> list[str]:
    texts = [t for t in get_text_parts(parts) if t]
    texts += [json.dumps(d, sort_keys=True) for d in get_data_parts(parts)]
    return texts


def reply_of(task: Task) -> str | None:
    """The agent's answer in a finished task: artifacts, else the status message, else
    the agent's last message."""
    texts = [t for artifact in task.artifacts for t in _parts_text(artifact.parts)]
    if not texts and task.status.HasField("message"):
        texts = _parts_text(task.status.message.parts)
    if not texts:
        agents = [m for m in task.history if m.role == Role.ROLE_AGENT]
        texts = _parts_text(agents[-1].parts) if agents else []
    return "\n".join(texts) if texts else None


def _from_task(task: Task, latency_ms: int) -> Asked:
    state = task.status.state
    name = TaskState.Name(state)
    if state in STATE_CLAIMS:
        return Asked(True, latency_ms, True, STATE_CLAIMS[state], reply=reply_of(task),
                     success_form=state == TaskState.TASK_STATE_COMPLETED, note=name)
    return Asked(True, latency_ms, True, abandoned=True, note=f"left in {name}")


def _from_error(exc: BaseException, latency_ms: int) -> Asked:
    """An exception from the client, as what the agent answered."""
    chain: list[BaseException] = []
    e: BaseException | None = exc
    while e is not None and len(chain) < 8:
        chain.append(e)
        e = e.__cause__ or e.__context__
    if any(isinstance(x, A2AClientTimeoutError | httpx.TimeoutException | TimeoutError)
           for x in chain):
        return Asked(False, note="no answer in time")
    if isinstance(exc, AgentCardResolutionError):
        return Asked(False, note=f"the agent card could not be read: {exc}")
    if any(isinstance(x, httpx.HTTPStatusError) for x in chain):
        return Asked(True, latency_ms, False, note=f"not an A2A answer: {exc}")
    if any(isinstance(x, httpx.RequestError) for x in chain):
        return Asked(False, note=f"no answer: {type(exc).__name__}")
    code = JSON_RPC_ERROR_CODE_MAP.get(type(exc)) if isinstance(exc, A2AError) else None
    if code is not None:
        return Asked(True, latency_ms, True, error_claim(code),
                     note=f"JSON-RPC error {code}")
    return Asked(True, latency_ms, False, note=f"not an A2A answer: {exc}")


class CannotCall(RuntimeError):
    """The prober cannot call this agent as configured (its card offers no interface
    a2a-sdk's client speaks): a setup problem, not an answer."""


class A2ASender:
    """One route's A2A client: the card is read once and kept while calls go through."""

    def __init__(self, route: Route) -> None:
        self.route = route
        self._http = httpx.AsyncClient(timeout=route.timeout_seconds)
        self._client: Client | None = None

    async def close(self) -> None:
        if self._client is not None:
            await self._client.close()
        await self._http.aclose()

    async def _connected(self) -> Client:
        if self._client is None:
            card = await A2ACardResolver(self._http, self.route.upstream).get_agent_card(
                relative_card_path=self.route.card_path)
            factory = ClientFactory(ClientConfig(streaming=False, httpx_client=self._http))
            try:
                self._client = factory.create(card)
            except ValueError as exc:  # no JSON-RPC interface: not the agent's answer
                raise CannotCall(f"{self.route.upstream}: {exc}") from exc
        return self._client

    async def _finish(self, client: Client, task: Task, deadline: float) -> Task:
        """Poll a task still running until it ends or waits for input, or the deadline."""
        delay = 0.05
        while task.status.state in (TaskState.TASK_STATE_SUBMITTED,
                                    TaskState.TASK_STATE_WORKING):
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            await asyncio.sleep(min(delay, left))
            delay = min(2.0, delay * 2)
            task = await client.get_task(GetTaskRequest(id=task.id))
        return task

    async def ask(self, text: str) -> Asked:
        started = time.monotonic()
        deadline = started + self.route.timeout_seconds
        message = Message(role=Role.ROLE_USER, message_id=str(uuid.uuid4()),
                          parts=[Part(text=text)])
        task: Task | None = None
        try:
            async with asyncio.timeout(self.route.timeout_seconds):
                client = await self._connected()
                last: StreamResponse | None = None
                async for event in client.send_message(SendMessageRequest(message=message)):
                    last = event
                latency_ms = round((time.monotonic() - started) * 1000)
                if last is None:
                    return Asked(True, latency_ms, False, note="an empty answer")
                if last.HasField("message"):
                    reply = "\n".join(_parts_text(last.message.parts)) or None
                    return Asked(True, latency_ms, True, reply=reply, success_form=True,
                                 note="a message")
                task = last.task
                if task.status.state in (TaskState.TASK_STATE_SUBMITTED,
                                         TaskState.TASK_STATE_WORKING):
                    task = await self._finish(client, task, deadline)
                    latency_ms = round((time.monotonic() - started) * 1000)
                return _from_task(task, latency_ms)
        except TimeoutError:
            if task is None:
                self._client = None
                return Asked(False, note=f"no answer within {self.route.timeout_seconds:g} s")
            await self._cancel(task)
            return Asked(True, round((time.monotonic() - started) * 1000), True, abandoned=True,
                         note=f"not finished within {self.route.timeout_seconds:g} s; cancelled")
        except (A2AClientError, A2AError, httpx.HTTPError, ValueError) as exc:
            asked = _from_error(exc, round((time.monotonic() - started) * 1000))
            if not asked.answered:
                self._client = None  # read the card again next time
            return asked

    async def _cancel(self, task: Task) -> None:
        """Tell the agent the prober has left the task; nothing depends on its answer."""
        if self._client is None:
            return
        try:
            async with asyncio.timeout(min(5.0, self.route.timeout_seconds)):
                await self._client.cancel_task(CancelTaskRequest(id=task.id))
        except (TimeoutError, A2AClientError, A2AError, httpx.HTTPError, ValueError):
            pass
