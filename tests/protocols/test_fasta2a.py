"""A2A through the proxy with an A2A server nobody on this project wrote (issue 32):
pydantic-ai agents served by fasta2a, on pydantic-ai's FunctionModel (no network),
called through the proxy with a2a-sdk's client and with fasta2a's own client. Every
task is one fact whose fields say what happened, although fasta2a writes timestamps
without a zone and answers 0.3's methods in 1.0's shapes, and its client polls with
``"id": null``."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

import reporters
from reporters.httpsig import sign_request_headers
from reporters.protocols.a2a import STREAMING_PROMISE
from tests.asgi import loopback_socket, served
from tests.protocols.a2a_agent import Caller
from tests.proxy.support import running_proxy, stored_facts
from tests.support import BureauUnderTest, missing

pytestmark = pytest.mark.thirdparty

#: how long the "slow" agent thinks: a task's latency_ms must cover it
SLOW = 0.4


def _imports() -> Any:
    try:
        import fasta2a.client
        import pydantic_ai
        from fasta2a.pydantic_ai import agent_to_a2a
    except ImportError as exc:
        missing(f"fasta2a and pydantic-ai-slim are not installed ({exc}): "
                "pip install -e '.[test]'")
    return fasta2a.client, pydantic_ai, agent_to_a2a


@asynccontextmanager
async def fasta2a_agent() -> AsyncIterator[str]:
    """A pydantic-ai agent on a FunctionModel, served by fasta2a (uvicorn, loopback):
    ``fail`` makes the model raise (the task fails), ``slow`` thinks ``SLOW`` seconds,
    anything else is answered at once."""
    _, pydantic_ai, agent_to_a2a = _imports()
    from pydantic_ai.messages import ModelResponse, TextPart, UserPromptPart
    from pydantic_ai.models.function import FunctionModel

    async def model(messages: list[Any], info: Any) -> Any:
        prompt = [p.content for m in messages for p in getattr(m, "parts", [])
                  if isinstance(p, UserPromptPart)][-1]
        if prompt == "fail":
            raise RuntimeError("the model failed")
        if prompt == "slow":
            await asyncio.sleep(SLOW)
        return ModelResponse(parts=[TextPart(f"done: {prompt}")])

    sock, url = loopback_socket()
    app = agent_to_a2a(pydantic_ai.Agent(FunctionModel(model), name="calc"), url=url)
    async with served(app, sock, lifespan="on"):  # fasta2a's worker runs in its lifespan
        yield url


class MendTimestamps(httpx.AsyncBaseTransport):
    """a2a-sdk's client refuses fasta2a's zone-less timestamps, as the proxy did before
    issue 32: on the caller's side only, this adds the zone to what the client reads, as
    the issue's measurement did, so that a2a-sdk's client can follow fasta2a's tasks.
    The proxy sees, relays and judges fasta2a's bytes as they are."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        body = await response.aread()
        await response.aclose()
        mended = re.sub(rb'("timestamp":\s*"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?)"',
                        rb'\1Z"', body)
        headers = [(k, v) for k, v in response.headers.raw if k.lower() != b"content-length"]
        return httpx.Response(response.status_code, headers=headers, content=mended,
                              request=request)

    async def aclose(self) -> None:
        await self.inner.aclose()


async def poll_until_done(get: Any, task_id: str) -> str:
    """Poll a task until fasta2a says it ended (each poll is a real call, no sleep
    before a check: the loop waits on the agent's progress)."""
    for _ in range(400):
        state = await get(task_id)
        if state in ("completed", "failed", "TASK_STATE_COMPLETED", "TASK_STATE_FAILED"):
            return str(state)
        await asyncio.sleep(0.02)
    raise AssertionError(f"task {task_id} did not end")


async def test_fasta2a_through_the_proxy_with_both_clients(bureau: BureauUnderTest,
                                                           tmp_path: Path) -> None:
    client_module, _, _ = _imports()
    key = await bureau.reporter(("facts",))
    agent = reporters.key_id(reporters.generate_key())
    signer = reporters.generate_key()
    ids: dict[str, set[str]] = {}
    async with fasta2a_agent() as base, running_proxy(
            bureau, tmp_path, [{"prefix": "/calc", "agent": agent, "upstream": base,
                                "protocol": "a2a"}], reporter=key, settle=0.3,
            quiet=30.0) as px:
        assert px.proxy.cards.declared("/calc") is not None
        # a2a-sdk's client (A2A 1.0, signed): sends, then polls each task to its end
        caller = Caller(px.url + "/calc", signer, transport=MendTimestamps())
        try:
            for text in ("complete", "fail", "slow"):
                sent = await caller.send(text)

                async def get_state(task_id: str) -> Any:
                    from a2a.types.a2a_pb2 import GetTaskRequest, TaskState

                    got = await (await caller.client(False)).get_task(
                        GetTaskRequest(id=task_id))
                    return TaskState.Name(got.status.state)

                before = len(caller.interactions)
                await poll_until_done(get_state, sent.task.id)
                ids[f"sdk {text}"] = set(sent.interactions + caller.interactions[before:])
            streamed = await caller.send("complete", streaming=True)
            ids["sdk stream"] = set(streamed.interactions)
        finally:
            await caller.close()
        # fasta2a's own client (A2A 0.3 method names; its polls carry "id": null)
        seen: list[str] = []

        async def interaction(response: httpx.Response) -> None:
            if "Bureau-Interaction" in response.headers:
                seen.append(response.headers["Bureau-Interaction"])

        async def sign(request: httpx.Request) -> None:
            request.headers.update(sign_request_headers(signer, request.method,
                                                        str(request.url)))

        async with httpx.AsyncClient(event_hooks={"request": [sign],
                                                  "response": [interaction]}) as http:
            own = client_module.A2AClient(px.url + "/calc/", http_client=http)
            for text in ("complete", "fail", "slow"):
                before = len(seen)
                started = time.monotonic()
                answer = await own.send_message({
                    "role": "user", "kind": "message", "message_id": f"m-{text}",
                    "parts": [{"kind": "text", "text": text}]})
                result = answer["result"]
                task_id = result.get("id") or result["task"]["id"]

                async def own_state(task_id: str) -> Any:
                    return (await own.get_task(task_id))["result"]["status"]["state"]

                await poll_until_done(own_state, task_id)
                ids[f"fasta2a {text}"] = set(seen[before:])
                if text == "slow":
                    slow_took = time.monotonic() - started
        await px.proxy.settle()
        metrics = await px.metrics()
    # every call of a task answered with the task's one interaction
    assert {name: len(i) for name, i in ids.items()} == dict.fromkeys(ids, 1), ids
    facts = await stored_facts(bureau.database_url, reporters.key_id(key))
    assert len(facts) == len(ids)  # nothing else: the polls made no facts of their own

    def fields(name: str) -> tuple[Any, ...]:
        f = facts[next(iter(ids[name]))]
        return (f["answered"], f["well_formed"], f["claimed"],
                {p["promise"]: p["kept"] for p in f["promises"]})

    for client in ("sdk", "fasta2a"):
        assert fields(f"{client} complete") == (True, True, "SUCCESS", {})
        assert fields(f"{client} fail") == (True, True, "FAILURE", {})
        assert fields(f"{client} slow") == (True, True, "SUCCESS", {})
        slow = facts[next(iter(ids[f"{client} slow"]))]["latency_ms"]
        assert slow >= SLOW * 1000, slow  # to the final state, not to "submitted"
    assert slow <= slow_took * 1000 + 50
    assert fields("sdk stream") == (True, True, "SUCCESS", {STREAMING_PROMISE: True})
    assert all(f["caller"] == reporters.key_id(signer) for f in facts.values())
    deviations = {labels: value for (name, labels), value in metrics.items()
                  if name == "bureau_proxy_protocol_deviations"}
    # said once per agent, however many calls deviated
    assert deviations[(("deviation", "timestamp-without-zone"), ("route", "/calc"))] == 1
