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

It is also the bench's **bare forwarder**: with ``--forward-to URL`` it forwards every
call to ``URL`` and back with aiohttp, as the proxy does (a pooled ``ClientSession``,
uvloop where installed), and does nothing else: no route, no signature, no fact. What
a proxy written on aiohttp costs before it does any of its own work.

    python bench/proxy_bench_agent.py        # prints "agent on http://127.0.0.1:PORT"
    python bench/proxy_bench_agent.py --forward-to http://127.0.0.1:PORT
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
from typing import Any

import aiohttp
import yarl
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


#: hop-by-hop fields and what aiohttp recomputes, not forwarded (as the proxy does)
_HOP = frozenset({"connection", "keep-alive", "transfer-encoding", "host", "content-length",
                  "content-encoding"})


def forwarder_app(upstream: str) -> web.Application:
    session: list[aiohttp.ClientSession] = []

    async def lifetime(_: web.Application) -> Any:
        session.append(aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)))
        yield
        await session[0].close()

    async def forward(request: web.Request) -> web.StreamResponse:
        body = await request.read()
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP}
        async with session[0].request(request.method,
                                      yarl.URL(upstream + request.raw_path, encoded=True),
                                      headers=headers, data=body) as resp:
            back = {k: v for k, v in resp.headers.items() if k.lower() not in _HOP}
            if not resp.headers.get("Content-Type", "").startswith("text/event-stream"):
                return web.Response(status=resp.status, body=await resp.read(), headers=back)
            out = web.StreamResponse(status=resp.status, headers=back)  # relayed as it comes
            await out.prepare(request)
            async for chunk in resp.content.iter_any():
                await out.write(chunk)
            await out.write_eof()
            return out

    app = web.Application()
    app.cleanup_ctx.append(lifetime)
    app.router.add_route("*", "/{tail:.*}", forward)
    return app


async def serve(app: web.Application, what: str) -> None:
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    print(f"{what} on http://{host}:{port}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await runner.cleanup()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--forward-to", metavar="URL", help="be the bare forwarder to URL")
    args = parser.parse_args()
    if args.forward_to is None:
        asyncio.run(serve(agent_app(), "agent"))
    else:
        from reporters.proxy.cli import run_fast  # on uvloop where installed, as the proxy

        run_fast(serve(forwarder_app(args.forward_to), "bare forwarder"))
