"""What an MCP route's server declares of its tools, as the proxy learns it.

A ``tools/call`` is judged against the tool's declarations: its ``outputSchema`` (is the
result well-formed?) and its ``inputSchema`` (were the arguments the caller's mistake?).
The proxy learns them from every ``tools/list`` answer it carries on the route. A route
whose callers call tools without listing them first is asked by the proxy itself —
**off the caller's path**: the call that finds the tools unknown is forwarded and judged
at once with what is known (nothing: its arguments and result are not checked), and one
background task opens a session of the proxy's own (the ``mcp`` package's client, the
caller's ``Authorization`` passed on) to list them. At most one such task runs per
route; after a failure the route is not asked again for ``retry_seconds``, so a slow or
broken server costs one session now and then, never one per call (issue 32: 8 s per
call with a slow ``initialize``, when the answer waited for the proxy's own session).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from reporters.protocols import mcp

if TYPE_CHECKING:
    import jsonschema

    from reporters.proxy.metrics import ProxyMetrics

log = logging.getLogger("reporters.proxy")

#: After a failed attempt to list a route's tools, wait this long before another.
RETRY_SECONDS = 60.0


@dataclass(frozen=True, slots=True)
class Tool:
    input_schema: jsonschema.protocols.Validator | None
    output_schema: jsonschema.protocols.Validator | None


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
        self._tools: dict[str, dict[str, Tool]] = {}
        self._metrics = metrics
        self._clock = clock
        self._retry = retry_seconds
        self._asking: dict[str, asyncio.Task[None]] = {}
        self._failed_at: dict[str, float] = {}

    def learn(self, prefix: str, declared: Mapping[str, mcp.Declared]) -> None:
        """A ``tools/list`` answer: the route's tools are these (a later answer replaces
        what an earlier one said of the same tool)."""
        known = self._tools.setdefault(prefix, {})
        for name, d in declared.items():
            known[name] = Tool(
                None if d.input_schema is None else mcp.compile_output_schema(d.input_schema),
                None if d.output_schema is None else mcp.compile_output_schema(d.output_schema))

    def known(self, prefix: str) -> bool:
        return prefix in self._tools

    def output_schema(self, prefix: str, tool: str | None
                      ) -> jsonschema.protocols.Validator | None:
        entry = self._tools.get(prefix, {}).get(tool or "")
        return None if entry is None else entry.output_schema

    def input_schemas(self, prefix: str
                      ) -> dict[str, jsonschema.protocols.Validator | None] | None:
        """tool name -> its compiled ``inputSchema``; None while the route's tools are
        not known (nothing can then be called the caller's mistake)."""
        tools = self._tools.get(prefix)
        return None if tools is None else {n: t.input_schema for n, t in tools.items()}

    def ask_later(self, asking: Asking) -> None:
        """Have the route's tools listed in the background, unless they are known, being
        asked for, or the last attempt failed less than ``retry_seconds`` ago."""
        prefix = asking.prefix
        if prefix in self._tools or prefix in self._asking:
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

        try:
            async with asyncio.timeout(asking.timeout), \
                    httpx2.AsyncClient(headers=dict(asking.headers),
                                       timeout=asking.timeout) as http, \
                    streamable_http_client(asking.url, http_client=http) as (read, write), \
                    ClientSession(read, write) as session:
                await session.initialize()
                listed = await session.list_tools()
        except Exception as exc:  # any failure: the schemas stay unknown, calls go on
            self._failed_at[asking.prefix] = self._clock()
            self._metrics.schema_failures.labels(asking.prefix).inc()
            log.warning("could not ask %s for its tools (schemas unknown, not checked; "
                        "asked again in %g s at the earliest): %s", asking.url, self._retry,
                        exc)
            return
        self.learn(asking.prefix, {t.name: mcp.Declared(t.input_schema, t.output_schema)
                                   for t in listed.tools})

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
