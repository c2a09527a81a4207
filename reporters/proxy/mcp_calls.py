"""MCP calls through the proxy (streamable HTTP transport): one fact per ``tools/call``.

:class:`MCPCalls` handles a JSON-RPC call whose method is an MCP method
(:mod:`reporters.protocols.mcp` reads it; docs/proxy.md, "MCP"):

* ``tools/call`` — forwarded; the answer (a JSON body, or the event of an SSE stream
  that carries the response) is judged: ``isError`` claims ``FAILURE``, any other
  result ``SUCCESS``; ``structuredContent`` is validated against the tool's
  ``outputSchema``; a call that was the caller's mistake by the tool's declarations (an
  unknown tool, arguments its ``inputSchema`` refuses) and was answered ``isError``
  claims ``DECLINED`` (SPEC §4, r4). The declarations are the ones in the last
  ``tools/list`` answer the proxy carried on this route; until it has seen one, the
  call is judged without them and the server is asked in the background
  (reporters.proxy.mcp_tools): the answer never waits for that. ``latency_ms`` is to the
  response (a stream's progress notifications before it do not count as the answer).
* ``tools/list`` — forwarded; its answer teaches the declarations. No fact.
* everything else (``initialize``, ``ping``, notifications, resources, prompts) is
  forwarded untouched, streams relayed unbuffered. No fact.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from aiohttp import web

from reporters.protocols import jsonrpc, mcp
from reporters.protocols.answers import parse_strict
from reporters.protocols.sse import Event
from reporters.proxy.holding import Measured
from reporters.proxy.mcp_tools import Asking, ToolSchemas
from reporters.proxy.measure import promises_kept, task_hash
from reporters.proxy.protocol_call import FORWARD_FAILURES, ProtocolCall, ProxyServices
from reporters.proxy.relay import Buffered, Streamed

log = logging.getLogger("reporters.proxy")


class MCPCalls:
    def __init__(self, proxy: ProxyServices) -> None:
        self.proxy = proxy
        self.schemas = ToolSchemas(proxy.metrics, proxy.now)

    async def close(self) -> None:
        await self.schemas.close()

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
        prefix = call.route.prefix
        if not self.schemas.known(prefix):
            self.schemas.ask_later(Asking(
                prefix, call.route.upstream + call.sub_path,
                {k: v for k, v in call.request.headers.items() if k.lower() == "authorization"},
                call.route.timeout_seconds))

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
        m = self._judge(base, answer, (prefix, tool, rpc.params), bounds)
        satisfactory = m.claimed == "SUCCESS" and m.well_formed is True
        # A streamed answer is already with the caller: its fact is held as soon as it
        # is known (a crash between the two loses it, as a crash mid-answer would).
        await p.facts.hold(interaction, m, task, satisfactory)
        if isinstance(relayed, Streamed):
            return relayed.response
        return p.respond(relayed, p.marks(interaction))

    def _judge(self, base: Measured, answer: Mapping[str, Any],
               asked: tuple[str, str | None, Any], bounds: Mapping[str, int]) -> Measured:
        """The fact of a ``tools/call``; ``asked`` is (route prefix, tool, the call's
        params)."""
        prefix, tool, params = asked
        latency = answer.get("latency_ms")
        promises = promises_kept(True, latency, bounds)
        got: jsonrpc.Answer | None = answer.get("got")
        if got is None:
            return replace(base, latency_ms=latency, well_formed=False, promises=promises)
        if got.error_code is not None:
            outcome = mcp.judge_error(got.error_code)
        else:
            outcome = mcp.judge_result(got.result, self.schemas.output_schema(prefix, tool))
            if outcome.claimed == "FAILURE":  # only then: was it the caller's mistake?
                outcome = mcp.refused(outcome, self.schemas.callers_mistake(prefix, params))
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
            page = mcp.listed_page(result)
            if page is not None:
                self.schemas.learn(call.route.prefix, page, mcp.page_asked(rpc.params))
        if isinstance(relayed, Streamed):
            return relayed.response
        return p.respond(relayed, {})
