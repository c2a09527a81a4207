"""The reporting proxy: an aiohttp reverse proxy that reports one fact per call.

For each call under a configured route prefix it reads the request and hands it to the
handler of what it is: a protocol's plumbing (forwarded, no fact), an A2A or MCP call
(:mod:`reporters.proxy.a2a_calls`, :mod:`reporters.proxy.mcp_calls`), or a plain HTTP
call (:mod:`reporters.proxy.plain_calls`). Each forwards the call, learns the caller
from an RFC 9421 signature if there is a valid one (never refusing the call otherwise),
measures the answer, and answers the caller with ``Bureau-Reporter`` and
``Bureau-Interaction`` headers (a caller needs both to attest) once the fact is held;
the derived-outcome tracker keeps it until its ``derived`` is known. A background task
sends released facts through :class:`reporters.Reporter`, whose spool makes them
durable.

Facts are held on disk from the moment the call is answered
(:mod:`reporters.proxy.holding`): a crash loses none, and a restart carries on with
them. A graceful stop releases them with what is known, then delivers the spool for a
bounded time (docs/proxy.md). The ops routes (``/healthz``, ``/readyz``, ``/metrics``)
are :mod:`reporters.daemon.ops`.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import aiohttp
import nacl.signing
from aiohttp import web
from multidict import CIMultiDict

from reporters import Reporter, key_id
from reporters._internal.spool import DB_FILE
from reporters.daemon import ops
from reporters.daemon.deadlines import BodyLate, DeadlineRunner, read_body
from reporters.daemon.ids import InteractionIds
from reporters.protocols import jsonrpc, methods
from reporters.proxy.callers import Callers
from reporters.proxy.cards import AgentCards
from reporters.proxy.config import ProxyConfig, Route, extra_installed, install_hint
from reporters.proxy.deviations import Deviations
from reporters.proxy.holding import HeldFacts
from reporters.proxy.measure import DeliverableCheck
from reporters.proxy.metrics import ProxyMetrics
from reporters.proxy.plain_calls import PlainCalls, load_check
from reporters.proxy.protocol_call import (
    FORWARD_FAILURES,
    ProtocolCall,
    failure_kind,
    failure_response,
)
from reporters.proxy.relay import (
    Buffered,
    OnEvent,
    OnStart,
    Relaying,
    Streamed,
    Upstream,
    forwardable,
)
from reporters.proxy.relay import forward as relay_forward
from reporters.proxy.run_report import RunReport
from reporters.proxy.tracker import DerivedOutcomes

log = logging.getLogger("reporters.proxy")

INTERACTION_HEADER = "Bureau-Interaction"
#: Where A2A agents publish their card (1.0 and 0.3, and 0.2's name): reading one is
#: forwarded and makes no fact.
CARD_PATHS = ("/.well-known/agent-card.json", "/.well-known/agent.json")
REPORTER_HEADER = "Bureau-Reporter"

def _timestamp(wall: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(wall))


def protocol_of(route: Route, method: str, body: bytes) -> tuple[str, jsonrpc.Request] | None:
    """Which protocol this call speaks, and its JSON-RPC request; None: plain HTTP (a
    route with ``protocol = "http"``, not a POST, not one JSON-RPC 2.0 request, or a
    method of neither protocol, or of the other protocol than the route's). Known by the
    method's name alone, with or without the protocol's extra installed."""
    if route.protocol == "http" or method != "POST":
        return None
    rpc = jsonrpc.read_request(body)
    if rpc is None:
        return None
    name = methods.protocol_of_method(rpc.method)
    if name is None or route.protocol not in ("auto", name):
        return None
    return name, rpc


class Proxy:
    """One running proxy. ``checks`` maps a route prefix to a deliverable check (they
    override a route's ``check`` setting); ``clock`` is monotonic seconds for the
    tracker, ``wall`` Unix seconds for ``observed_at`` and signature freshness."""

    def __init__(self, config: ProxyConfig, key: nacl.signing.SigningKey, *,
                 checks: Mapping[str, DeliverableCheck] | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 wall: Callable[[], float] = time.time) -> None:
        self.config = config
        self.metrics = ProxyMetrics()
        self.report = RunReport(self.metrics, lambda: self.reporter.pending)
        #: the run's tally, for the log line at the stop
        self.run = self.report.tally
        self.reporter = Reporter(key, config.bureau_url, config.spool_dir,
                                 on_rejection=self.report.rejected,
                                 on_delivery=self.report.delivered,
                                 keep_delivered=config.keep_delivered_days * 86400)
        self.tracker = DerivedOutcomes(clock, window=config.settle_seconds,
                                       quiet=config.quiet_seconds)
        self.facts = HeldFacts(self.reporter, self.tracker, self.metrics, clock=clock,
                               wall=wall)
        self.metrics.watch(lambda: self.facts.count, lambda: self.reporter.pending)
        self.proxy_id = config.proxy_id or "px-" + hashlib.sha256(
            key_id(key).encode()).hexdigest()[:10]
        self._clock = clock
        self._wall = wall
        self.callers = Callers(wall)
        self._plain = PlainCalls(self, self.callers, checks or {})
        self._ids: InteractionIds | None = None
        self.cards = AgentCards(config.routes, self.metrics, config.card_refresh_seconds,
                                config.max_card_bytes)
        self._readers: dict[str, Any] = {}
        self._said_unread: set[tuple[str, str]] = set()
        self.deviations = Deviations(self.metrics)
        self._session: aiohttp.ClientSession | None = None
        #: started and not stopping: /readyz says so
        self.serving = False

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Open the spool (one proxy per spool directory), take back the facts an
        earlier run left held, and start releasing."""
        await self.reporter.start()  # takes the spool lock: one proxy per spool dir
        self._ids = InteractionIds(self.config.spool_dir, self.proxy_id)
        # Idle upstream connections are closed after 4 s, before the agent's server
        # closes them (uvicorn's default is 5 s): a POST sent on a connection the other
        # end has just closed fails with a reset, and is not retried.
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0, keepalive_timeout=4),
            cookie_jar=aiohttp.DummyCookieJar())
        await self.cards.start(self._session)
        recovered = await self.facts.recover()
        if recovered:
            log.warning("took back %d held facts from %s: the last run did not stop "
                        "cleanly; carrying on with them", recovered, self.spool_file)
        self.facts.start()
        self.serving = True

    async def close(self) -> None:
        """Stop: release every held fact with what is known into the spool, deliver the
        spool for at most ``drain_seconds``, log what was done and what is left, close.
        Whatever is not delivered stays on disk for the next start on this spool."""
        self.serving = False
        drain = self.config.drain_seconds
        deadline = self._clock() + drain
        await self.facts.stop(drain)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.reporter.flush(), max(0.0, deadline - self._clock()))
        self.report.stopped(self.facts.count, self.spool_file)
        for reader in self._readers.values():
            await reader.close()  # an MCP route's tools still being asked for
        await self.cards.close()
        if self._session is not None:
            await self._session.close()
        await self.reporter.close()

    async def settle(self, *, release: bool = False) -> None:
        """Wait until no fact is held or queued and the bureau has answered for every
        spooled one (tests, the simulation, a gateway draining before a deploy).
        ``release``: do not wait out the windows; release held facts as :meth:`close`
        would."""
        await self.facts.settle(release=release)

    @property
    def spool_file(self) -> Path:
        return self.config.spool_dir / DB_FILE

    def app(self) -> web.Application:
        """The forwarding application: every route, and the proxy's own ``/healthz``
        and ``/readyz`` (``/metrics`` is on :meth:`ops_app` only). Its lifetime is the
        proxy's: :meth:`start` when it starts, :meth:`close` when it stops."""
        app = web.Application(client_max_size=self.config.max_body)
        app[PROXY] = self

        async def lifetime(_: web.Application) -> AsyncIterator[None]:
            await self.start()
            yield
            await self.close()

        app.cleanup_ctx.append(lifetime)
        ops.add_own_routes(app, self)
        app.router.add_route("*", "/{tail:.*}", self.handle)
        return app

    def ops_app(self) -> web.Application:
        """The ops listener's application: ``/healthz``, ``/readyz``, ``/metrics``."""
        return ops.ops_app(self)

    def runner(self, **kwargs: Any) -> web.AppRunner:
        """A runner for :meth:`app` that holds the head deadline (``header_seconds``):
        the way to serve it."""
        return DeadlineRunner(self.app(), self.config.header_seconds,
                              lambda limit: self.metrics.limits.labels(limit).inc(), **kwargs)

    async def bureau_ready(self) -> str | None:
        """``None`` when the bureau answers its ``/readyz`` with 200 within 2 s, else
        why not."""
        return await ops.bureau_readiness(self._session, self.config.bureau_url)

    # ------------------------------------------------------------------ the call

    async def handle(self, request: web.Request) -> web.StreamResponse:
        raw_path, _, raw_query = request.raw_path.partition("?")
        route = self.config.route_for(raw_path)
        if route is None:
            self.metrics.unrouted.inc()
            return web.json_response({"status": "rejected", "code": "NOT_FOUND", "path": "",
                                      "detail": "no route for this path"}, status=404)
        try:
            body = await read_body(request, self.config.body_seconds)
        except BodyLate as exc:
            self.metrics.limits.labels("body_seconds").inc()
            return web.json_response({"status": "rejected", "code": "MALFORMED_ENVELOPE",
                                      "path": "", "detail": str(exc)}, status=408)
        sub_path = raw_path[len(route.prefix):] or "/"
        # The caller is learnt only for calls that make a fact (a plain call's while it
        # is upstream: reporters.proxy.callers).
        call = ProtocolCall(request, route, None, self._wall(), sub_path, raw_query, body)
        if self._no_fact(route, request, sub_path):
            return await self.pass_through(call)
        read = protocol_of(route, request.method, body)
        if read is None:
            return await self._plain.handle(call)
        name, rpc = read
        if not extra_installed(name):  # an auto route; a named one needs its extra
            return await self._unread(call, name)
        call = replace(call, caller=self.callers.of(request))
        return await self._reader(name).handle(call, rpc)  # type: ignore[no-any-return]

    # ------------------------------------------------------------------ protocol calls

    @staticmethod
    def _no_fact(route: Route, request: web.Request, sub_path: str) -> bool:
        """Requests that are a protocol's plumbing, not work: reading an A2A agent card;
        an MCP session's event stream (GET) and its end (DELETE). Forwarded (streams
        unbuffered), no fact."""
        if route.protocol in ("auto", "a2a") and request.method == "GET" and \
                sub_path in (route.card_path, *CARD_PATHS):
            return True
        if route.protocol in ("auto", "mcp"):
            return methods.is_mcp_transport(request.method, request.headers)
        return False

    async def _unread(self, call: ProtocolCall, protocol: str) -> web.StreamResponse:
        """A call of a protocol whose extra is not installed, on an ``auto`` route:
        forwarded, no fact (its plumbing must not pass for an interaction, and its work
        cannot be read), counted as ``made="unread"`` and said once per route."""
        self.metrics.protocol_calls.labels(call.route.prefix, protocol, "unread").inc()
        if (call.route.prefix, protocol) not in self._said_unread:
            self._said_unread.add((call.route.prefix, protocol))
            log.warning("route %s: %s calls arrive, but the %s extra is not installed: they "
                        "are forwarded without a fact; %s", call.route.prefix,
                        protocol.upper(), protocol, install_hint(protocol))
        return await self.pass_through(call)

    def _reader(self, protocol: str) -> Any:
        """The handler of ``protocol``'s calls, imported when first needed (the a2a and
        mcp extras)."""
        if protocol not in self._readers:
            if protocol == "a2a":
                from reporters.proxy.a2a_calls import A2ACalls

                self._readers[protocol] = A2ACalls(self)
            else:
                from reporters.proxy.mcp_calls import MCPCalls

                self._readers[protocol] = MCPCalls(self)
        return self._readers[protocol]

    def now(self) -> float:
        """The proxy's clock (monotonic seconds)."""
        return self._clock()

    def next_interaction(self) -> str:
        assert self._ids is not None
        return self._ids.next()

    @staticmethod
    def timestamp(wall: float) -> str:
        return _timestamp(wall)

    @property
    def session(self) -> aiohttp.ClientSession:
        """The upstream client session (from :meth:`start` on)."""
        assert self._session is not None
        return self._session

    def marks(self, interaction: str) -> dict[str, str]:
        """The headers that let a caller attest to ``interaction``."""
        return {REPORTER_HEADER: self.reporter.key_id, INTERACTION_HEADER: interaction}

    async def forward(self, call: ProtocolCall, *, on_start: OnStart | None = None,
                      on_event: OnEvent | None = None) -> Buffered | Streamed:
        """Forward a protocol call; an event stream is relayed as it comes (relay)."""
        route = call.route
        target = route.upstream + call.sub_path + ("?" + call.query if call.query else "")
        try:
            got = await relay_forward(
                Relaying(self.session, self._clock, route.timeout_seconds,
                         self.config.max_body, drop=frozenset({"content-encoding"})),
                Upstream(call.request, target, self.upstream_headers(call.request), call.body),
                on_start=on_start, on_event=on_event)
        except FORWARD_FAILURES as exc:
            self.metrics.calls.labels(route.prefix, failure_kind(exc)).inc()
            raise
        self.metrics.calls.labels(route.prefix, "answered").inc()
        if isinstance(got, Streamed) and got.too_large:
            self.metrics.limits.labels("event_size").inc()
            log.warning("an event of a stream from %s passed max_body (%d bytes): relayed, "
                        "no longer read", route.prefix, self.config.max_body)
        if isinstance(got, Buffered):
            self.metrics.upstream_seconds.labels(route.prefix).observe(got.latency_ms / 1000)
        self.run.calls += 1
        return got

    async def pass_through(self, call: ProtocolCall) -> web.StreamResponse:
        """Forward a protocol call that makes no fact, streams relayed unbuffered."""

        async def ignore(event: object, latency_ms: int) -> None:
            return None

        try:
            got = await self.forward(call, on_event=ignore)
        except FORWARD_FAILURES as exc:
            return self.failure(exc, {})
        return got.response if isinstance(got, Streamed) else self.respond(got, {})

    def failure(self, exc: BaseException, marks: Mapping[str, str]) -> web.Response:
        response = failure_response(exc)
        response.headers.update(marks)
        return response

    @staticmethod
    def respond(up: Buffered, marks: Mapping[str, str]) -> web.Response:
        headers = forwardable(up.headers, frozenset({"content-encoding"}))
        headers.update(marks)
        return web.Response(status=up.status, body=up.body, headers=headers)

    def upstream_headers(self, request: web.Request) -> CIMultiDict[str]:
        headers = forwardable(request.headers)
        forwarded_for = request.headers.get("X-Forwarded-For")
        peer = request.remote or "unknown"
        headers["X-Forwarded-For"] = f"{forwarded_for}, {peer}" if forwarded_for else peer
        return headers

PROXY = web.AppKey("reporters.proxy", Proxy)


def create_app(config: ProxyConfig, key: nacl.signing.SigningKey, *,
               checks: Mapping[str, DeliverableCheck] | None = None) -> web.Application:
    """The proxy as an aiohttp application (``app[PROXY]`` is the :class:`Proxy`)."""
    return Proxy(config, key, checks=checks).app()


__all__ = ["INTERACTION_HEADER", "PROXY", "REPORTER_HEADER", "Proxy", "create_app",
           "load_check"]
