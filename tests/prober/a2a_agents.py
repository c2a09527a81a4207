"""A2A agents built with a2a-sdk's server, on one loopback port under one path each,
served by uvicorn: they solve the task, get it wrong, reject it, fail it, ask for more
input, answer with a plain message, or never finish. Each keeps the JSON-RPC methods it
was called with."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from contextlib import asynccontextmanager
from typing import Any

from a2a.helpers import new_task_from_user_message, new_text_message, new_text_part
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
    Role,
)
from starlette.applications import Starlette
from starlette.routing import Mount

from tests.asgi import loopback_socket, served
from tests.probing.solver import solve

BEHAVIOURS = ("right", "wrong", "rejects", "fails", "asks", "messages", "stalls")

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


class Executor(AgentExecutor):
    def __init__(self, behaviour: str) -> None:
        self.behaviour = behaviour
        self.cancelled = 0

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = context.get_user_input()
        answer = solve(text)
        if self.behaviour == "messages":
            await event_queue.enqueue_event(new_text_message(f"It is {answer}.",
                                                             role=Role.ROLE_AGENT))
            return
        task = context.current_task or new_task_from_user_message(context.message)
        await event_queue.enqueue_event(task)
        up = TaskUpdater(event_queue, task.id, task.context_id)
        if self.behaviour == "rejects":
            await up.reject(up.new_agent_message([new_text_part("I do not do puzzles.")]))
        elif self.behaviour == "fails":
            await up.failed(up.new_agent_message([new_text_part("I could not work it out.")]))
        elif self.behaviour == "asks":
            await up.requires_input(up.new_agent_message([new_text_part("In which units?")]))
        elif self.behaviour == "stalls":
            await up.start_work()
        else:
            reply = answer if self.behaviour == "right" else answer + "1"
            await up.add_artifact([new_text_part(f"The answer is {reply}.")])
            await up.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        self.cancelled += 1
        task = context.current_task
        if task is not None:
            await TaskUpdater(event_queue, task.id, task.context_id).cancel()


class MethodLog:
    """ASGI middleware keeping the JSON-RPC method of every POST, by path."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.methods: dict[str, list[str]] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        chunks = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        body = b"".join(chunks)
        try:
            method = json.loads(body).get("method", "?")
        except ValueError:
            method = "?"
        self.methods.setdefault(scope["path"].rstrip("/"), []).append(method)
        sent = False

        async def replay() -> MutableMapping[str, Any]:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


def card(url: str, version: str, binding: str = "JSONRPC") -> AgentCard:
    return AgentCard(
        name="puzzle solver", description="answers questions", version="1.0.0",
        supported_interfaces=[AgentInterface(protocol_binding=binding, url=url,
                                             protocol_version=version)],
        capabilities=AgentCapabilities(streaming=False),
        default_input_modes=["text/plain"], default_output_modes=["text/plain"],
        skills=[AgentSkill(id="solve", name="solve", description="solves", tags=["math"])])


@asynccontextmanager
async def a2a_agents(version: str) -> AsyncIterator[tuple[str, dict[str, Executor], MethodLog]]:
    """Every behaviour at ``http://127.0.0.1:PORT/<behaviour>``, cards of A2A ``version``."""
    sock, base = loopback_socket()
    executors = {b: Executor(b) for b in BEHAVIOURS}
    mounts = []
    handlers = []
    for name, executor in executors.items():
        c = card(f"{base}/{name}/", version)
        handler = DefaultRequestHandler(agent_executor=executor, task_store=InMemoryTaskStore(),
                                        agent_card=c)
        handlers.append(handler)
        mounts.append(Mount(f"/{name}", routes=[
            *create_agent_card_routes(c),
            *create_jsonrpc_routes(handler, "/", enable_v0_3_compat=version == "0.3")]))
    # and one whose card offers gRPC only, which the prober's client does not speak
    mounts.append(Mount("/grpc-only", routes=create_agent_card_routes(
        card(f"{base}/grpc-only/", version, "GRPC"))))
    app = MethodLog(Starlette(routes=mounts))
    try:
        async with served(app, sock):
            yield base, executors, app
    finally:
        for handler in handlers:  # end a2a-sdk's tasks for the tasks left unfinished
            await handler.aclose()
