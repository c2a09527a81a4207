"""What the protocol handlers (reporters.proxy.a2a_calls, reporters.proxy.mcp_calls) get
from the proxy: the call as it came in, and the proxy's services they use.

Its own module so that the handlers need not import reporters.proxy.app, which loads
them (only when their extra is installed): the dependency runs one way."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

import aiohttp
from aiohttp import web

from reporters.proxy.cards import AgentCards
from reporters.proxy.config import ProxyConfig, Route
from reporters.proxy.deviations import Deviations
from reporters.proxy.holding import HeldFacts
from reporters.proxy.metrics import ProxyMetrics
from reporters.proxy.relay import Buffered, OnEvent, OnStart, Streamed, TooLarge

#: what forwarding a call can raise when the agent does not answer it
FORWARD_FAILURES = (TimeoutError, aiohttp.ClientError, TooLarge)


@dataclass(frozen=True, slots=True)
class ProtocolCall:
    """One call as it came in, for the protocol handlers."""

    request: web.Request
    route: Route
    caller: str | None
    wall: float  # when it arrived, Unix seconds
    sub_path: str
    query: str
    body: bytes


class ProxyServices(Protocol):
    """The part of :class:`reporters.proxy.app.Proxy` a protocol handler uses."""

    config: ProxyConfig
    metrics: ProxyMetrics
    facts: HeldFacts
    cards: AgentCards
    deviations: Deviations

    def now(self) -> float: ...

    def next_interaction(self) -> str: ...

    def timestamp(self, wall: float) -> str: ...

    def marks(self, interaction: str) -> dict[str, str]: ...

    async def forward(self, call: ProtocolCall, *, on_start: OnStart | None = None,
                      on_event: OnEvent | None = None) -> Buffered | Streamed: ...

    async def pass_through(self, call: ProtocolCall) -> web.StreamResponse: ...

    def failure(self, exc: BaseException, marks: Mapping[str, str]) -> web.Response: ...

    def respond(self, up: Buffered, marks: Mapping[str, str]) -> web.Response: ...


__all__ = ["FORWARD_FAILURES", "ProtocolCall", "ProxyServices"]
