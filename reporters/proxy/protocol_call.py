"""What the call handlers (reporters.proxy.plain_calls, .a2a_calls, .mcp_calls) get from
the proxy: the call as it came in, the proxy's services they use, and what a call the
agent did not answer comes to.

Its own module so that the handlers need not import reporters.proxy.app, which loads
them (only when their extra is installed): the dependency runs one way."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

import aiohttp
from aiohttp import web
from multidict import CIMultiDict

from reporters.proxy.cards import AgentCards
from reporters.proxy.config import ProxyConfig, Route
from reporters.proxy.deviations import Deviations
from reporters.proxy.holding import HeldFacts
from reporters.proxy.metrics import ProxyMetrics
from reporters.proxy.relay import Buffered, OnEvent, OnStart, Streamed, TooLarge
from reporters.proxy.run_report import RunTally

#: what forwarding a call can raise when the agent does not answer it
FORWARD_FAILURES = (TimeoutError, aiohttp.ClientError, TooLarge)


def failure_kind(exc: BaseException) -> str:
    """The ``result`` label of a call the agent did not answer."""
    if isinstance(exc, TimeoutError):
        return "timeout"
    return "too_large" if isinstance(exc, TooLarge) else "unreachable"


def failure_response(exc: BaseException) -> web.Response:
    """What the caller of a call the agent did not answer gets."""
    if isinstance(exc, TimeoutError):
        status, detail = 504, "the agent did not answer in time"
    elif isinstance(exc, TooLarge):
        status, detail = 502, "the agent's answer was too large"
    else:
        status, detail = 502, f"the agent could not be reached: {type(exc).__name__}"
    return web.json_response({"status": "rejected", "code": "UPSTREAM", "path": "",
                              "detail": detail}, status=status)


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
    run: RunTally

    @property
    def session(self) -> aiohttp.ClientSession: ...

    def upstream_headers(self, request: web.Request) -> CIMultiDict[str]: ...

    def now(self) -> float: ...

    def next_interaction(self) -> str: ...

    def timestamp(self, wall: float) -> str: ...

    def marks(self, interaction: str) -> dict[str, str]: ...

    async def forward(self, call: ProtocolCall, *, on_start: OnStart | None = None,
                      on_event: OnEvent | None = None) -> Buffered | Streamed: ...

    async def pass_through(self, call: ProtocolCall) -> web.StreamResponse: ...

    def failure(self, exc: BaseException, marks: Mapping[str, str]) -> web.Response: ...

    def respond(self, up: Buffered, marks: Mapping[str, str]) -> web.Response: ...


__all__ = ["FORWARD_FAILURES", "ProtocolCall", "ProxyServices", "failure_kind",
           "failure_response"]
