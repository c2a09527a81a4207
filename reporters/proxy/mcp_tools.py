"""What an MCP route's server declares of its tools, as the proxy learns it.

A ``tools/call`` is judged against the tool's declarations: its ``outputSchema`` (is the
result well-formed?) and its ``inputSchema`` (were the arguments the caller's mistake?).
The proxy learns them from every ``tools/list`` answer it carries on the route.

``tools/list`` is paginated, and a server's tools may change. Every page teaches the
declarations of the tools on it. A *whole listing* — the pages from the first (no
cursor) along the cursors to the last (no ``nextCursor``), all carried by the proxy —
is the route's tools from then on: a tool it no longer lists is forgotten, and a tool
it does not list is the caller's mistake. Until the proxy has seen a whole listing,
nothing is said of a tool it has not seen (it may be on a page not yet seen).

A route whose callers call tools without listing them all first is asked by the proxy
itself — **off the caller's path**: the call is forwarded and judged at once with what
is known, and one background task opens a session of the proxy's own (the ``mcp``
package's client, the caller's ``Authorization`` passed on) to list them, every page. At
most one such task runs per route; after a failure the route is not asked again for
``retry_seconds``, so a slow or broken server costs one session now and then, never one
per call (issue 32: 8 s per call with a slow ``initialize``, when the answer waited for
the proxy's own session).

The tools are the route's, whoever listed them: a server that lists different tools to
different callers is judged by the last whole listing the proxy saw.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from reporters.protocols import mcp

if TYPE_CHECKING:
    import jsonschema

    from reporters.proxy.metrics import ProxyMetrics

log = logging.getLogger("reporters.proxy")

#: After a failed attempt to list a route's tools, wait this long before another.
RETRY_SECONDS = 60.0
#: Listings a route may have under way, page by page (the oldest is forgotten beyond).
MAX_LISTINGS = 16
#: Pages the proxy reads of a listing when it asks itself (a server's cursors may
#: never end).
MAX_PAGES = 100
#: Compiled schemas kept (by content), beyond which the oldest is compiled again.
MAX_COMPILED = 4096


@dataclass(frozen=True, slots=True)
class Asking:
    """Where and how to ask a route's server for its tools."""

    prefix: str
    url: str
    headers: Mapping[str, str]
    timeout: float


class ToolSchemas:
    """Per route: tool name -> its compiled schemas; and the background asking."""

    def __init__(self, metrics: ProxyMetrics, clock: Callable[[], float],
                 retry_seconds: float = RETRY_SECONDS) -> None:
        self._tools: dict[str, dict[str, mcp.Declared]] = {}
        #: routes whose ``_tools`` are a whole listing
        self._whole: set[str] = set()
        #: per route: the cursor of a listing's next page -> its tools so far
        self._listings: dict[str, dict[str, dict[str, mcp.Declared]]] = {}
        #: a schema's canonical JSON -> it compiled (see :meth:`_compiled`)
        self._compiled: dict[str, jsonschema.protocols.Validator] = {}
        self._metrics = metrics
        self._clock = clock
        self._retry = retry_seconds
        self._asking: dict[str, asyncio.Task[None]] = {}
        self._failed_at: dict[str, float] = {}

    def learn(self, prefix: str, page: mcp.Page, cursor: str | None) -> None:
        """A ``tools/list`` answer to a request for the page at ``cursor`` (None: the
        first): its tools' declarations replace what was known of them; when it ends a
        whole listing (see the module docstring), the route's tools are that listing."""
        tools = dict(page.tools)
        self._tools.setdefault(prefix, {}).update(tools)
        listings = self._listings.setdefault(prefix, {})
        so_far = {} if cursor is None else listings.pop(cursor, None)
        if so_far is None:
            return  # a page of a listing the proxy did not see from its first page
        so_far.update(tools)
        if page.next_cursor is None:
            self._tools[prefix] = so_far
            self._whole.add(prefix)
            return
        listings[page.next_cursor] = so_far
        while len(listings) > MAX_LISTINGS:
            del listings[next(iter(listings))]

    def known(self, prefix: str) -> bool:
        """Whether the route's tools are known: a whole listing of them was seen."""
        return prefix in self._whole

    def output_schema(self, prefix: str, tool: str | None
                      ) -> jsonschema.protocols.Validator | None:
        entry = self._tools.get(prefix, {}).get(tool or "")
        return None if entry is None else self._compiled_schema(entry.output_schema)

    def callers_mistake(self, prefix: str, params: Any) -> str | None:
        """Why a ``tools/call`` with ``params`` on the route is the caller's mistake by
        what its server declared (:func:`reporters.protocols.mcp.callers_mistake`); None
        when nothing known says so."""
        tools = self._tools.get(prefix)
        if tools is None:
            return None
        return mcp.callers_mistake(
            params, tools, lambda name: self._compiled_schema(tools[name].input_schema),
            all_listed=prefix in self._whole)

    def _compiled_schema(self, schema: Mapping[str, Any] | None
                         ) -> jsonschema.protocols.Validator | None:
        """``schema`` compiled, when a call first needs it, and kept by its content.
        Checking a schema against JSON Schema's metaschema is slow (20-25 ms for a tool
        of 20 arguments, load 8): compiled as they were listed, a 50-tool server's
        ``tools/list`` held the proxy's event loop 0.8-1 s at every session's start."""
        if schema is None:
            return None
        key = json.dumps(schema, sort_keys=True, separators=(",", ":"))
        compiled = self._compiled.get(key)
        if compiled is None:
            compiled = self._compiled[key] = mcp.compile_output_schema(schema)
            if len(self._compiled) > MAX_COMPILED:
                del self._compiled[next(iter(self._compiled))]
        return compiled

    def ask_later(self, asking: Asking) -> None:
        """Have the route's tools listed in the background, unless they are known, being
        asked for, or the last attempt failed less than ``retry_seconds`` ago."""
        prefix = asking.prefix
        if prefix in self._whole or prefix in self._asking:
            return
        failed = self._failed_at.get(prefix)
        if failed is not None and self._clock() - failed < self._retry:
            return
        task = asyncio.create_task(self._ask(asking), name=f"mcp-tools {prefix}")
        self._asking[prefix] = task
        task.add_done_callback(lambda _: self._asking.pop(prefix, None))

    async def _ask(self, asking: Asking) -> None:
        import httpx2
        from mcp.client.session import ClientSession
        from mcp.client.streamable_http import streamable_http_client
        from mcp.types import PaginatedRequestParams

        try:
            async with asyncio.timeout(asking.timeout), \
                    httpx2.AsyncClient(headers=dict(asking.headers),
                                       timeout=asking.timeout) as http, \
                    streamable_http_client(asking.url, http_client=http) as (read, write), \
                    ClientSession(read, write) as session:
                await session.initialize()
                cursor: str | None = None
                for _ in range(MAX_PAGES):
                    listed = await session.list_tools(params=None if cursor is None else
                                                      PaginatedRequestParams(cursor=cursor))
                    self.learn(asking.prefix, mcp.Page(
                        {t.name: mcp.Declared(t.input_schema, t.output_schema)
                         for t in listed.tools}, listed.next_cursor), cursor)
                    cursor = listed.next_cursor
                    if cursor is None:
                        break
        except Exception as exc:  # any failure: the schemas stay unknown, calls go on
            self._failed_at[asking.prefix] = self._clock()
            self._metrics.schema_failures.labels(asking.prefix).inc()
            log.warning("could not ask %s for its tools (schemas unknown, not checked; "
                        "asked again in %g s at the earliest): %s", asking.url, self._retry,
                        exc)
            return

    async def close(self) -> None:
        """Stop asking (at the proxy's stop)."""
        tasks = list(self._asking.values())
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def settled(self) -> None:
        """Wait until no route is being asked (tests)."""
        while self._asking:
            await asyncio.gather(*self._asking.values(), return_exceptions=True)
