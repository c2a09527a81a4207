"""MCP calls through the proxy (streamable HTTP transport): one fact per ``tools/call``.

:class:`MCPCalls` handles a JSON-RPC call whose method is an MCP method
(:mod:`reporters.protocols.mcp` reads it; docs/proxy.md, "MCP"):

* ``tools/call`` — forwarded; the answer (a JSON body, or the event of an SSE stream
  that carries the response) is judged: ``isError`` claims ``FAILURE``, any other
  result ``SUCCESS``; ``structuredContent`` is validated against the tool's
  ``outputSchema``. The schema is the one the proxy saw in the last ``tools/list``
  answer it carried on this route; if it has seen none, it asks the server itself
  (its own session, with the mcp package's client, the caller's ``Authorization`` passed
  on), once per route until an answer comes. ``latency_ms`` is to the response (a
  stream's progress notifications before it do not count as the answer).
* ``tools/list`` — forwarded; its answer teaches the schemas. No fact.
* everything else (``initialize``, ``ping``, notifications, resources, prompts) is
  forwarded untouched, streams relayed unbuffered. No fact.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import jsonschema
from aiohttp import web

from reporters.protocols import jsonrpc, mcp
from reporters.protocols.answers import parse_strict
from reporters.protocols.sse import Event
from reporters.proxy.holding import Measured
from reporters.proxy.measure import promises_kept, task_hash
from reporters.proxy.protocol_call import FORWARD_FAILURES, ProtocolCall, ProxyServices
from reporters.proxy.relay import Buffered, Streamed

log = logging.getLogger("reporters.proxy")


@dataclass(frozen=True, slots=True)
class _Tool:
    schema: jsonschema.protocols.Validator | None


class ToolSchemas:
    """Per route: tool name -> its compiled ``outputSchema``, from ``tools/list``."""

    def __init__(self) -> None:
        self._tools: dict[str, dict[str, _Tool]] = {}

    def learn(self, prefix: str, schemas: Mapping[str, Mapping[str, Any] | None]) -> None:
        known = self._tools.setdefault(prefix, {})
        for name, schema in schemas.items():
            known[name] = _Tool(None if schema is None else mcp.compile_output_schema(schema))

    def known(self, prefix: str) -> bool:
        return prefix in self._tools

    def schema(self, prefix: str, tool: str | None) -> jsonschema.protocols.Validator | None:
        entry = self._tools.get(prefix, {}).get(tool or "")
        return None if entry is None else entry.schema


class MCPCalls:
    def __init__(self, proxy: ProxyServices) -> None:
        self.proxy = proxy
        self.schemas = ToolSchemas()

    async def handle(self, call: ProtocolCall, rpc: jsonrpc.Request) -> web.StreamResponse:
        p = self.proxy
        made = "fact" if rpc.method == mcp.TOOLS_CALL and not rpc.notification else "none"
        p.metrics.protocol_calls.labels(call.route.prefix, "mcp", made).inc()
        if rpc.method == mcp.TOOLS_LIST and not rpc.notification:
            return await self._tools_list(call, rpc)
        if made == "none":
            return await p.pass_through(call)
        agent = call.route.agent
        interaction = p.next_interaction()
        tool = mcp.tool_name(rpc.params)
        answer: dict[str, Any] = {}

        async def on_start() -> dict[str, str]:
            return p.marks(interaction)

        async def on_event(event: Event, latency_ms: int) -> None:
            ok, doc = parse_strict(event.data)
            got = jsonrpc.read_answer(doc) if ok else None
            if got is not None and got.id == rpc.id and "got" not in answer:
                answer.update(got=got, latency_ms=latency_ms)

        bounds = p.config.promises.get(agent, {})
        base = Measured(agent, call.caller, p.timestamp(call.wall), True, None, None, {},
                        None, None)
        task = task_hash("POST", call.sub_path, call.query, call.body)
        try:
            relayed = await p.forward(call, on_start=on_start, on_event=on_event)
        except FORWARD_FAILURES as exc:
            m = replace(base, answered=False, promises=promises_kept(False, None, bounds))
            await p.facts.hold(interaction, m, task, False)
            return p.failure(exc, p.marks(interaction))
        if isinstance(relayed, Buffered):
            ok, doc = parse_strict(relayed.body)
            got = jsonrpc.read_answer(doc) if ok else None
            if got is not None:
                answer.update(got=got)
            answer["latency_ms"] = relayed.latency_ms
        if tool is not None and not self.schemas.known(call.route.prefix):
            await self._ask_tools(call)
        m = self._judge(base, answer, call.route.prefix, tool, bounds)
        satisfactory = m.claimed == "SUCCESS" and m.well_formed is True
        # A streamed answer is already with the caller: its fact is held as soon as it
        # is known (a crash between the two loses it, as a crash mid-answer would).
        await p.facts.hold(interaction, m, task, satisfactory)
        if isinstance(relayed, Streamed):
            return relayed.response
        return p.respond(relayed, p.marks(interaction))

    def _judge(self, base: Measured, answer: Mapping[str, Any], prefix: str,
               tool: str | None, bounds: Mapping[str, int]) -> Measured:
        latency = answer.get("latency_ms")
        promises = promises_kept(True, latency, bounds)
        got: jsonrpc.Answer | None = answer.get("got")
        if got is None:
            return replace(base, latency_ms=latency, well_formed=False, promises=promises)
        if got.error_code is not None:
            outcome = mcp.judge_error(got.error_code)
        else:
            outcome = mcp.judge_result(got.result, self.schemas.schema(prefix, tool))
        return replace(base, latency_ms=latency, well_formed=outcome.well_formed,
                       claimed=outcome.claimed, promises=promises)

    async def _tools_list(self, call: ProtocolCall, rpc: jsonrpc.Request) -> web.StreamResponse:
        p = self.proxy
        learned: list[Any] = []

        async def on_event(event: Event, latency_ms: int) -> None:
            ok, doc = parse_strict(event.data)
            got = jsonrpc.read_answer(doc) if ok else None
            if got is not None and got.id == rpc.id and got.error_code is None:
                learned.append(got.result)

        try:
            relayed = await p.forward(call, on_event=on_event)
        except FORWARD_FAILURES as exc:
            return p.failure(exc, {})
        if isinstance(relayed, Buffered):
            ok, doc = parse_strict(relayed.body)
            got = jsonrpc.read_answer(doc) if ok else None
            if got is not None and got.error_code is None:
                learned.append(got.result)
        for result in learned:
            schemas = mcp.output_schemas(result)
            if schemas is not None:
                self.schemas.learn(call.route.prefix, schemas)
        if isinstance(relayed, Streamed):
            return relayed.response
        return p.respond(relayed, {})

    async def _ask_tools(self, call: ProtocolCall) -> None:
        """Learn the route's tools from the server itself, with the mcp package's client
        on a session of the proxy's own."""
        import httpx2
        from mcp.client.session import ClientSession
        from mcp.client.streamable_http import streamable_http_client

        url = call.route.upstream + call.sub_path
        headers = {k: v for k, v in call.request.headers.items()
                   if k.lower() == "authorization"}
        try:
            async with httpx2.AsyncClient(headers=headers, timeout=call.route.timeout_seconds
                                          ) as http, \
                    streamable_http_client(url, http_client=http) as (read, write), \
                    ClientSession(read, write) as session:
                await session.initialize()
                listed = await session.list_tools()
        except Exception as exc:  # any failure: the schema stays unknown, the call goes on
            self.proxy.metrics.schema_failures.labels(call.route.prefix).inc()
            log.warning("could not ask %s for its tools (outputSchema unknown, not checked):"
                        " %s", url, exc)
            return
        self.schemas.learn(call.route.prefix,
                           {t.name: t.output_schema for t in listed.tools})
