"""An MCP server built with the ``mcp`` package (its low-level ``Server``, streamable
HTTP transport, uvicorn on loopback), and the package's client.

Tools: ``add`` (structured output that fits its ``outputSchema``), ``broken`` (answers
``isError: true``), ``liar`` (structured output that breaks its ``outputSchema``), and
the :data:`UNCHECKABLE` ones (schemas no validator can apply). The
low-level server publishes the schemas as given and does not check its own answers
against them, which is how a server that breaks its schema is built."""

from __future__ import annotations

import asyncio
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


def listing(pages: list[list[str]] | None, later_pages: asyncio.Event | None = None) -> Any:
    """The server's ``tools/list``: every tool in one answer, or, with ``pages``, the
    tools named on each page, one page an answer (the cursor is the page's number).
    The test may change ``pages`` while the server runs: a server whose tools change.
    ``later_pages``: the pages after the first are answered only once it is set."""
    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None
                         ) -> types.ListToolsResult:
        if pages is None:
            return types.ListToolsResult(tools=tools())
        page = int(params.cursor or 0) if params is not None else 0
        if page > 0 and later_pages is not None:
            await later_pages.wait()
        more = str(page + 1) if page + 1 < len(pages) else None
        return types.ListToolsResult(tools=[t for t in tools() if t.name in pages[page]],
                                     next_cursor=more)
    return list_tools


def calling(pages: list[list[str]] | None) -> Any:
    """The server's ``tools/call``; with ``pages``, a tool no page lists is unknown: it
    answers ``isError: true``, as real servers do."""
    async def call(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        if pages is not None and not any(params.name in page for page in pages):
            return types.CallToolResult(content=[types.TextContent(
                type="text", text=f"Unknown tool: {params.name}")], is_error=True)
        return await call_tool(ctx, params)
    return call


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    a, b = (params.arguments or {}).get("a", 0), (params.arguments or {}).get("b", 0)
    if params.name == "broken":
        return types.CallToolResult(content=[types.TextContent(type="text", text="it broke")],
                                    is_error=True)
    total: Any = f"{a + b}" if params.name == "liar" else a + b
    return types.CallToolResult(content=[types.TextContent(type="text", text=str(total))],
                                structured_content={"sum": total})


@asynccontextmanager
async def mcp_server(*, json_response: bool, wrap: Callable[[Any], Any] | None = None,
                     pages: list[list[str]] | None = None,
                     later_pages: asyncio.Event | None = None) -> AsyncIterator[str]:
    """The server's endpoint, ``http://127.0.0.1:PORT/mcp``; answers as JSON or SSE.
    ``wrap``: an ASGI middleware put in front of the server's application; ``pages``:
    the tools it lists, page by page (:func:`listing`; default: all, in one answer), the
    later ones once ``later_pages`` is set, if given."""
    server = Server("tools", on_list_tools=listing(pages, later_pages),
                    on_call_tool=calling(pages))
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
