"""An MCP server built with the ``mcp`` package (its low-level ``Server``, streamable
HTTP transport, uvicorn on loopback), and the package's client.

Tools: ``add`` (structured output that fits its ``outputSchema``), ``broken`` (answers
``isError: true``), ``liar`` (structured output that breaks its ``outputSchema``), and
the :data:`UNCHECKABLE` ones (schemas no validator can apply). The
low-level server publishes the schemas as given and does not check its own answers
against them, which is how a server that breaks its schema is built."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import mcp.types as types
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.server.lowlevel import Server

from tests.asgi import loopback_socket, served

SUM_SCHEMA = {"type": "object", "properties": {"sum": {"type": "integer"}},
              "required": ["sum"]}


def tools() -> list[types.Tool]:
    args = {"type": "object", "properties": {"a": {"type": "integer"},
                                             "b": {"type": "integer"}}}
    return [types.Tool(name="add", input_schema=args, output_schema=SUM_SCHEMA),
            types.Tool(name="broken", input_schema=args),
            types.Tool(name="liar", input_schema=args, output_schema=SUM_SCHEMA),
            *(types.Tool(name=name, input_schema=schema) for name, schema in UNCHECKABLE.items())]


#: Tools whose ``inputSchema`` is valid JSON Schema that no validator can apply: a
#: ``$ref`` to nowhere, a schema that refers to itself without end. They answer as
#: ``add`` does. (As an ``outputSchema`` the mcp client itself cannot apply them.)
UNCHECKABLE: dict[str, dict[str, Any]] = {
    "dangling": {"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}},
    "endless": {"type": "object", "allOf": [{"$ref": "#"}]},
}


async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=tools())


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    a, b = (params.arguments or {}).get("a", 0), (params.arguments or {}).get("b", 0)
    if params.name == "broken":
        return types.CallToolResult(content=[types.TextContent(type="text", text="it broke")],
                                    is_error=True)
    total: Any = f"{a + b}" if params.name == "liar" else a + b
    return types.CallToolResult(content=[types.TextContent(type="text", text=str(total))],
                                structured_content={"sum": total})


@asynccontextmanager
async def mcp_server(*, json_response: bool,
                     wrap: Callable[[Any], Any] | None = None) -> AsyncIterator[str]:
    """The server's endpoint, ``http://127.0.0.1:PORT/mcp``; answers as JSON or SSE.
    ``wrap``: an ASGI middleware put in front of the server's application."""
    server = Server("tools", on_list_tools=list_tools, on_call_tool=call_tool)
    app = server.streamable_http_app(json_response=json_response)
    if wrap is not None:
        app = wrap(app)
    sock, url = loopback_socket()
    async with served(app, sock, lifespan="on"):  # the session manager runs in it
        yield url


@asynccontextmanager
async def mcp_client(url: str) -> AsyncIterator[tuple[ClientSession, list[str]]]:
    """An initialised client session at ``url``, and the proxy's interaction ids seen."""
    interactions: list[str] = []

    async def seen(response: httpx2.Response) -> None:
        got = response.headers.get("Bureau-Interaction")
        if got is not None:
            interactions.append(got)

    async with httpx2.AsyncClient(timeout=30, event_hooks={"response": [seen]}) as http, \
            streamable_http_client(url, http_client=http) as (read, write), \
            ClientSession(read, write) as session:
        await session.initialize()
        yield session, interactions
