"""The agent behind the proxy in bench/proxy_bench.py: a process of its own, answering
canned bytes at once (the agent's own cost is not what is measured; a real agent's
time only makes the proxy's share smaller).

* ``/plain/…`` — ``{"answer": 42}``;
* ``/a2a`` — A2A 1.0 over JSON-RPC: ``SendMessage`` answered with a completed task,
  ``SendStreamingMessage`` with a stream of two events 20 ms apart; its card on ``GET``;
* ``/mcp`` — MCP over streamable HTTP (JSON answers): ``initialize``, ``tools/list``
  (one tool, ``add``, with an ``inputSchema`` and an ``outputSchema``, so the proxy
  checks arguments and results as it does for real servers) and ``tools/call``; the
  answers are made with the ``mcp`` package's own types, never written by hand.

    python bench/proxy_bench_agent.py        # prints "agent on http://127.0.0.1:PORT"
"""

from __future__ import annotations

import asyncio
import json
import signal
from typing import Any

from aiohttp import web

TASK = {"id": "t-1", "contextId": "c-1", "status": {"state": "TASK_STATE_COMPLETED"},
        "artifacts": [{"artifactId": "a", "parts": [{"text": "42"}]}]}
CARD = {"name": "bench", "description": "answers", "version": "1",
        "supportedInterfaces": [{"url": "http://x/", "protocolBinding": "JSONRPC",
                                 "protocolVersion": "1.0"}],
        "capabilities": {"streaming": True}, "defaultOutputModes": ["text/plain"],
        "skills": []}


def mcp_results() -> dict[str, Any]:
    """The MCP server's answers by method, as the ``mcp`` package's types dump them."""
    import mcp.types as t

    def dump(model: Any) -> Any:
        return model.model_dump(mode="json", by_alias=True, exclude_none=True)

    return {
        "initialize": dump(t.InitializeResult(
            protocolVersion=t.LATEST_PROTOCOL_VERSION,
            capabilities=t.ServerCapabilities(tools=t.ToolsCapability()),
            serverInfo=t.Implementation(name="bench", version="1"))),
        "tools/list": dump(t.ListToolsResult(tools=[t.Tool(
            name="add",
            inputSchema={"type": "object", "required": ["a", "b"],
                         "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}},
            outputSchema={"type": "object", "required": ["sum"],
                          "properties": {"sum": {"type": "integer"}}})])),
        "tools/call": dump(t.CallToolResult(content=[t.TextContent(type="text", text="42")],
                                            structuredContent={"sum": 42})),
    }


def agent_app() -> web.Application:
    results = mcp_results()

    async def plain(request: web.Request) -> web.Response:
        await request.read()
        return web.json_response({"answer": 42})

    async def a2a(request: web.Request) -> web.StreamResponse:
        if request.method == "GET":
            return web.json_response(CARD)
        doc = json.loads(await request.read())
        if doc["method"] != "SendStreamingMessage":
            return web.json_response({"jsonrpc": "2.0", "id": doc["id"],
                                      "result": {"task": TASK}})
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        working = {**TASK, "status": {"state": "TASK_STATE_WORKING"}}
        for task in (working, TASK):
            await resp.write(b"data: " + json.dumps(
                {"jsonrpc": "2.0", "id": doc["id"], "result": {"task": task}}).encode()
                + b"\n\n")
            if task is working:
                await asyncio.sleep(0.02)
        await resp.write_eof()
        return resp

    async def mcp(request: web.Request) -> web.Response:
        if request.method != "POST":
            return web.Response(status=405)
        doc = json.loads(await request.read())
        if "id" not in doc:  # a notification
            return web.Response(status=202)
        return web.json_response({"jsonrpc": "2.0", "id": doc["id"],
                                  "result": results[doc["method"]]})

    app = web.Application()
    app.router.add_route("*", "/a2a{tail:.*}", a2a)
    app.router.add_route("*", "/mcp{tail:.*}", mcp)
    app.router.add_route("*", "/plain{tail:.*}", plain)
    return app


async def serve() -> None:
    runner = web.AppRunner(agent_app(), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    print(f"agent on http://{host}:{port}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await runner.cleanup()


if __name__ == "__main__":
    asyncio.run(serve())
