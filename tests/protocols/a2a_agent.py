"""An A2A agent built with a2a-sdk's server (uvicorn on loopback), and a2a-sdk's client
pointed at it through the proxy.

What the agent does is said by the text it is sent: ``complete``, ``fail``, ``reject``,
``ask`` (input-required; the continuation completes), ``work`` (stays working until
cancelled), ``pdf`` (completes with an ``application/pdf`` part, outside the card's
output modes). Its card offers streaming, ``text/plain`` output and one skill,
``solve``, which declares ``text/plain`` output of its own."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import nacl.signing
from a2a.client import Client, ClientConfig, ClientFactory
from a2a.client.card_resolver import A2ACardResolver
from a2a.helpers import new_task_from_user_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    StreamResponse,
    Task,
)
from google.protobuf.struct_pb2 import Struct
from starlette.applications import Starlette
from starlette.routing import Mount

from reporters.httpsig import sign_request_headers
from tests.asgi import loopback_socket, served


class Executor(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = context.get_user_input().strip()
        task = context.current_task
        if task is None:
            assert context.message is not None
            task = new_task_from_user_message(context.message)
            await event_queue.enqueue_event(task)
        up = TaskUpdater(event_queue, task.id, task.context_id)
        if context.current_task is not None:  # a continuation: it had asked for input
            await up.add_artifact([new_text_part(f"Thanks, {text} it is.")])
            await up.complete()
        elif text == "fail":
            await up.failed(up.new_agent_message([new_text_part("I could not do it.")]))
        elif text == "reject":
            await up.reject(up.new_agent_message([new_text_part("Not my kind of task.")]))
        elif text == "ask":
            await up.requires_input(up.new_agent_message([new_text_part("Which units?")]))
        elif text == "work":
            await up.start_work()
        elif text == "pdf":
            await up.add_artifact([Part(raw=b"%PDF-1.4", media_type="application/pdf")])
            await up.complete()
        else:
            await up.start_work()
            await up.add_artifact([new_text_part("Done.")])
            await up.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task
        if task is not None:
            await TaskUpdater(event_queue, task.id, task.context_id).cancel()


def card(url: str, version: str) -> AgentCard:
    return AgentCard(
        name="helper", description="does what it is told", version="1.0.0",
        supported_interfaces=[AgentInterface(protocol_binding="JSONRPC", url=url,
                                             protocol_version=version)],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"], default_output_modes=["text/plain"],
        skills=[AgentSkill(id="solve", name="solve", description="solves", tags=["x"],
                           output_modes=["text/plain"])])


@asynccontextmanager
async def a2a_agent(version: str) -> AsyncIterator[str]:
    """The agent at ``http://127.0.0.1:PORT/agent``; yields that base URL."""
    sock, root = loopback_socket()
    base = root + "/agent"
    c = card(base + "/", version)
    handler = DefaultRequestHandler(agent_executor=Executor(), task_store=InMemoryTaskStore(),
                                    agent_card=c)
    app = Starlette(routes=[Mount("/agent", routes=[
        *create_agent_card_routes(c),
        *create_jsonrpc_routes(handler, "/", enable_v0_3_compat=version == "0.3")])])
    try:
        async with served(app, sock):
            yield base
    finally:
        # Tasks left waiting or working hold a2a-sdk's background tasks: end them now,
        # or they are destroyed pending later, in whatever test runs then.
        await handler.aclose()


@dataclass
class Answer:
    """What a2a-sdk's client got from one call, and the proxy's interaction header."""

    events: list[StreamResponse]
    interactions: list[str]

    @property
    def task(self) -> Task:
        for event in reversed(self.events):
            if event.HasField("task"):
                return event.task
        raise AssertionError(f"no task in {self.events}")

    @property
    def state(self) -> int:
        for event in reversed(self.events):
            if event.HasField("status_update"):
                return event.status_update.status.state
            if event.HasField("task"):
                return event.task.status.state
        raise AssertionError(f"no state in {self.events}")


class Caller:
    """a2a-sdk's client, its card read through the proxy and its URL the proxy's (as a
    gateway publishes it), optionally signing every request (RFC 9421)."""

    def __init__(self, url: str, signer: nacl.signing.SigningKey | None = None,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.url = url
        self.interactions: list[str] = []
        hooks: dict[str, list[Callable[[Any], Any]]] = {"response": [self._seen]}
        if signer is not None:
            async def sign(request: httpx.Request) -> None:
                request.headers.update(sign_request_headers(signer, request.method,
                                                            str(request.url)))
            hooks["request"] = [sign]
        self.http = httpx.AsyncClient(timeout=30, event_hooks=hooks, transport=transport)
        self.clients: dict[bool, Client] = {}

    async def _seen(self, response: httpx.Response) -> None:
        got = response.headers.get("Bureau-Interaction")
        if got is not None:
            self.interactions.append(got)

    async def client(self, streaming: bool) -> Client:
        if streaming not in self.clients:
            c = await A2ACardResolver(self.http, self.url).get_agent_card()
            for interface in c.supported_interfaces:
                interface.url = self.url + "/"
            self.clients[streaming] = ClientFactory(ClientConfig(
                streaming=streaming, httpx_client=self.http)).create(c)
        return self.clients[streaming]

    async def send(self, text: str, *, streaming: bool = False, task: Task | None = None,
                   metadata: Mapping[str, str] | None = None,
                   context_id: str | None = None) -> Answer:
        message = Message(role=Role.ROLE_USER, message_id=str(uuid.uuid4()),
                          parts=[Part(text=text)])
        if task is not None:
            message.task_id, message.context_id = task.id, task.context_id
        elif context_id is not None:
            message.context_id = context_id
        request = SendMessageRequest(message=message,
                                     configuration=SendMessageConfiguration())
        if metadata:
            s = Struct()
            s.update(dict(metadata))
            request.metadata.CopyFrom(s)
        before = len(self.interactions)
        events: list[StreamResponse] = []
        stream = (await self.client(streaming)).send_message(request)
        try:
            async for event in stream:
                events.append(event)
        finally:
            await stream.aclose()  # type: ignore[attr-defined]
        return Answer(events, self.interactions[before:])

    async def get(self, task: Task) -> Task:
        return await (await self.client(False)).get_task(GetTaskRequest(id=task.id))

    async def cancel(self, task: Task) -> Task:
        return await (await self.client(False)).cancel_task(CancelTaskRequest(id=task.id))

    async def close(self) -> None:
        for c in self.clients.values():
            await c.close()
        await self.http.aclose()
