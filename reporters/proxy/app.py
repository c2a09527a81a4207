"""The reporting proxy: an aiohttp reverse proxy that reports one fact per call.

For each call under a configured route prefix it (1) reads the request, (2) learns the
caller from an RFC 9421 signature if there is a valid one (never refusing the call
otherwise), (3) forwards it to the route's upstream, (4) answers the caller with the
upstream's answer plus ``Bureau-Reporter``/``Bureau-Interaction`` headers (a caller needs
both to attest), (5) measures the answer, and (6) hands the call to the derived-outcome
tracker, which holds the fact until its ``derived`` is known. A background task sends
released facts through :class:`reporters.Reporter`, whose spool makes them durable.

Facts are held on disk from the moment the call is answered
(:mod:`reporters.proxy.holding`): a crash loses none, and a restart carries on with
them. A graceful stop releases them with what is known, then delivers the spool for a
bounded time (docs/proxy.md). The ops routes (``/healthz``, ``/readyz``, ``/metrics``)
are :mod:`reporters.proxy.ops`.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import importlib
import logging
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import nacl.signing
import yarl
from aiohttp import web
from multidict import CIMultiDict

from reporters import Rejection, Reporter, key_id
from reporters._internal.outcomes import Delivery
from reporters._internal.spool import DB_FILE
from reporters._internal.wording import count
from reporters.httpsig import HttpSignatureError, NonceStore, verify_request
from reporters.protocols import jsonrpc, methods
from reporters.proxy import ops
from reporters.proxy.cards import AgentCards
from reporters.proxy.config import ProxyConfig, Route, extra_installed, install_hint
from reporters.proxy.deviations import Deviations
from reporters.proxy.holding import HeldFacts, Measured
from reporters.proxy.ids import InteractionIds
from reporters.proxy.measure import (
    Check,
    DeliverableCheck,
    Exchange,
    claimed,
    compile_schema,
    promises_kept,
    task_hash,
    well_formed,
)
from reporters.proxy.metrics import ProxyMetrics
from reporters.proxy.protocol_call import FORWARD_FAILURES, ProtocolCall
from reporters.proxy.relay import Buffered, OnEvent, OnStart, Streamed, TooLarge, forwardable
from reporters.proxy.relay import forward as relay_forward
from reporters.proxy.tracker import DerivedOutcomes

log = logging.getLogger("reporters.proxy")

INTERACTION_HEADER = "Bureau-Interaction"
#: Where A2A agents publish their card (1.0 and 0.3, and 0.2's name): reading one is
#: forwarded and makes no fact.
CARD_PATHS = ("/.well-known/agent-card.json", "/.well-known/agent.json")
REPORTER_HEADER = "Bureau-Reporter"

def _timestamp(wall: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(wall))


def load_check(spec: str) -> DeliverableCheck:
    """``module:function`` -> the function (a route's deliverable check)."""
    module, _, name = spec.partition(":")
    fn = getattr(importlib.import_module(module), name)
    if not callable(fn):
        raise ValueError(f"{spec} is not callable")
    check: DeliverableCheck = fn
    return check


_Upstream = Buffered
_TooLarge = TooLarge


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


def _failure_kind(exc: BaseException) -> str:
    """The ``result`` label of a call the agent did not answer."""
    if isinstance(exc, TimeoutError):
        return "timeout"
    return "too_large" if isinstance(exc, _TooLarge) else "unreachable"


@dataclass
class RunTally:
    """What this run did, for the log line at the stop."""

    calls: int = 0
    accepted: int = 0
    duplicate: int = 0
    rejected: int = 0


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
        self.reporter = Reporter(key, config.bureau_url, config.spool_dir,
                                 on_rejection=self._rejected, on_delivery=self._delivered,
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
        self._nonces = NonceStore()
        self._validators = {r.prefix: compile_schema(r.schema) for r in config.routes
                            if r.schema is not None}
        self._checks: dict[str, DeliverableCheck] = {
            r.prefix: load_check(r.check) for r in config.routes if r.check is not None}
        self._checks.update(checks or {})
        self._ids: InteractionIds | None = None
        self.cards = AgentCards(config.routes, self.metrics, config.card_refresh_seconds)
        self._readers: dict[str, Any] = {}
        self._said_unread: set[tuple[str, str]] = set()
        self.deviations = Deviations(self.metrics)
        self._session: aiohttp.ClientSession | None = None
        #: the run's tally, for the log line at the stop
        self.run = RunTally()
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
        self._log_stop()
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
        body = await request.read()
        sub_path = raw_path[len(route.prefix):] or "/"
        wall = self._wall()
        if self._no_fact(route, request, sub_path):  # reported nowhere: no caller to learn
            return await self.pass_through(ProtocolCall(request, route, None, wall, sub_path,
                                                        raw_query, body))
        read = protocol_of(route, request.method, body)
        if read is not None:
            name, rpc = read
            if not extra_installed(name):  # an auto route; a named one needs its extra
                return await self._unread(
                    ProtocolCall(request, route, None, wall, sub_path, raw_query, body), name)
            call = ProtocolCall(request, route, self._caller(request), wall, sub_path,
                                raw_query, body)
            return await self._reader(name).handle(call, rpc)  # type: ignore[no-any-return]
        interaction = self.next_interaction()
        forwarding = asyncio.ensure_future(
            self._forward(request, route, sub_path, raw_query, body))
        try:
            caller = await self._caller_meanwhile(request)
        except BaseException:
            forwarding.cancel()
            raise
        try:
            answer = await forwarding
            self.metrics.calls.labels(route.prefix, "answered").inc()
            self.metrics.upstream_seconds.labels(route.prefix).observe(answer.latency_ms / 1000)
            up: _Upstream | None = answer
            failure: web.Response | None = None
        except (TimeoutError, aiohttp.ClientError, _TooLarge) as exc:
            up, failure = None, self._failure(exc)
            self.metrics.calls.labels(route.prefix, _failure_kind(exc)).inc()
        measured = self._measure(route, caller, wall, request.method, sub_path, raw_query,
                                 body, up)
        satisfactory = up is not None and up.status < 400 and measured.well_formed is not False
        # On disk before the caller has the answer (and so the interaction id to attest).
        await self.facts.hold(interaction, measured,
                              task_hash(request.method, sub_path, raw_query, body), satisfactory)
        self.run.calls += 1
        marks = {REPORTER_HEADER: self.reporter.key_id, INTERACTION_HEADER: interaction}
        if up is None:
            assert failure is not None
            failure.headers.update(marks)
            return failure
        headers = forwardable(up.headers, frozenset({"content-encoding"}))
        headers.update(marks)
        return web.Response(status=up.status, body=up.body, headers=headers)

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

    #: What a call the agent did not answer raises.
    FAILURES = FORWARD_FAILURES

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

    def marks(self, interaction: str) -> dict[str, str]:
        """The headers that let a caller attest to ``interaction``."""
        return {REPORTER_HEADER: self.reporter.key_id, INTERACTION_HEADER: interaction}

    async def forward(self, call: ProtocolCall, *, on_start: OnStart | None = None,
                      on_event: OnEvent | None = None) -> Buffered | Streamed:
        """Forward a protocol call; an event stream is relayed as it comes (relay)."""
        assert self._session is not None
        route = call.route
        target = route.upstream + call.sub_path + ("?" + call.query if call.query else "")
        try:
            got = await relay_forward(
                self._session, call.request, target, self._upstream_headers(call.request),
                call.body, timeout=route.timeout_seconds, max_body=self.config.max_body,
                clock=self._clock, drop=frozenset({"content-encoding"}), on_start=on_start,
                on_event=on_event)
        except self.FAILURES as exc:
            self.metrics.calls.labels(route.prefix, _failure_kind(exc)).inc()
            raise
        self.metrics.calls.labels(route.prefix, "answered").inc()
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
        except self.FAILURES as exc:
            return self.failure(exc, {})
        return got.response if isinstance(got, Streamed) else self.respond(got, {})

    def failure(self, exc: BaseException, marks: Mapping[str, str]) -> web.Response:
        response = self._failure(exc)
        response.headers.update(marks)
        return response

    @staticmethod
    def respond(up: Buffered, marks: Mapping[str, str]) -> web.Response:
        headers = forwardable(up.headers, frozenset({"content-encoding"}))
        headers.update(marks)
        return web.Response(status=up.status, body=up.body, headers=headers)

    def _upstream_headers(self, request: web.Request) -> CIMultiDict[str]:
        headers = forwardable(request.headers)
        forwarded_for = request.headers.get("X-Forwarded-For")
        peer = request.remote or "unknown"
        headers["X-Forwarded-For"] = f"{forwarded_for}, {peer}" if forwarded_for else peer
        return headers

    # ------------------------------------------------------------------ plain calls

    async def _caller_meanwhile(self, request: web.Request) -> str | None:
        """:meth:`_caller`, checked while the call is on its way upstream: the check is
        CPU work (~0.3 ms) that the agent's own time hides. aiohttp writes a request in
        the loop turn after the one that starts it, hence two turns first (were it
        later, the check would only come before the sending, as it used to)."""
        if "Signature-Input" not in request.headers:
            return None
        for _ in range(2):
            await asyncio.sleep(0)
        return self._caller(request)

    def _caller(self, request: web.Request) -> str | None:
        """The verified signer, or None: the proxy reports, it does not gatekeep."""
        if "Signature-Input" not in request.headers:
            return None
        try:
            return verify_request(request.method, request.raw_path, request.headers,
                                  now=self._wall(), nonces=self._nonces)
        except HttpSignatureError:
            return None

    async def _forward(self, request: web.Request, route: Route, sub_path: str,
                       raw_query: str, body: bytes) -> _Upstream:
        assert self._session is not None
        target = route.upstream + sub_path + ("?" + raw_query if raw_query else "")
        headers = self._upstream_headers(request)
        started = self._clock()
        async with self._session.request(
                request.method, yarl.URL(target, encoded=True), headers=headers, data=body,
                allow_redirects=False,
                timeout=aiohttp.ClientTimeout(total=route.timeout_seconds)) as resp:
            chunks: list[bytes] = []
            size = 0
            async for chunk in resp.content.iter_chunked(64 * 1024):
                size += len(chunk)
                if size > self.config.max_body:
                    raise _TooLarge
                chunks.append(chunk)
            return _Upstream(resp.status, CIMultiDict(resp.headers), b"".join(chunks),
                             round((self._clock() - started) * 1000))

    @staticmethod
    def _failure(exc: BaseException) -> web.Response:
        if isinstance(exc, TimeoutError):
            status, detail = 504, "the agent did not answer in time"
        elif isinstance(exc, _TooLarge):
            status, detail = 502, "the agent's answer was too large"
        else:
            status, detail = 502, f"the agent could not be reached: {type(exc).__name__}"
        return web.json_response({"status": "rejected", "code": "UPSTREAM", "path": "",
                                  "detail": detail}, status=status)

    def _measure(self, route: Route, caller: str | None, wall: float, method: str,
                 sub_path: str, query: str, body: bytes, up: _Upstream | None) -> Measured:
        bounds = self.config.promises.get(route.agent, {})
        if up is None:
            return Measured(route.agent, caller, _timestamp(wall), False, None, None,
                             promises_kept(False, None, bounds), None, None)
        # A HEAD answer has no body by definition: nothing to judge.
        wf, doc = (None, None) if method == "HEAD" else well_formed(
            up.status, up.body, self._validators.get(route.prefix))
        claim = claimed(doc, route.claim.pointer, route.claim.values) if route.claim else None
        check: Check | None = None
        hook = self._checks.get(route.prefix)
        if hook is not None:
            try:
                check = hook(Exchange(method, sub_path, query, body, up.status, up.body, doc))
            except Exception:  # a broken check must not break the proxy or the call
                log.exception("deliverable check for %s failed", route.prefix)
        return Measured(route.agent, caller, _timestamp(wall), True, up.latency_ms, wf,
                         promises_kept(True, up.latency_ms, bounds), claim, check)

    # ------------------------------------------------------------------ reporting

    def _delivered(self, d: Delivery) -> None:
        m = self.metrics
        if d.failure is not None:
            m.delivery_failures.labels(d.failure).inc()
            m.delivery_retries.inc(d.lines)
            return
        m.delivered.labels("accepted").inc(d.accepted)
        m.delivered.labels("duplicate").inc(d.duplicate)
        m.delivery_retries.inc(d.unavailable)
        self.run.accepted += d.accepted
        self.run.duplicate += d.duplicate
        self.run.rejected += d.rejected
        seqs = "" if d.first_seq is None else f", ledger seq {d.first_seq}-{d.last_seq}"
        again = f", {d.unavailable} to send again" if d.unavailable else ""
        log.info("delivered %s: %d accepted, %d duplicate, %d rejected%s%s; "
                 "%d in the spool", count(d.lines - d.unavailable, "fact"), d.accepted,
                 d.duplicate, d.rejected, again, seqs, self.reporter.pending)

    def _log_stop(self) -> None:
        r = self.run
        left = self.reporter.pending, self.facts.count
        where = (f"{count(left[0], 'fact')} {'waits' if left[0] == 1 else 'wait'} in the "
                 f"spool and {left[1]} {'is' if left[1] == 1 else 'are'} held in "
                 f"{self.spool_file}: the next start on this spool sends them")
        log.info("stopped: %s forwarded, %s delivered (%d accepted, %d duplicate, "
                 "%d rejected); %s", count(r.calls, "call"),
                 count(r.accepted + r.duplicate + r.rejected, "fact"),
                 r.accepted, r.duplicate, r.rejected,
                 where if any(left) else "nothing left behind")

    def _rejected(self, rejection: Rejection) -> None:
        self.metrics.rejected.labels(rejection.code).inc()
        log.warning("the bureau refused a fact: %s at %s: %s", rejection.code, rejection.path,
                    rejection.detail)


PROXY = web.AppKey("reporters.proxy", Proxy)


def create_app(config: ProxyConfig, key: nacl.signing.SigningKey, *,
               checks: Mapping[str, DeliverableCheck] | None = None) -> web.Application:
    """The proxy as an aiohttp application (``app[PROXY]`` is the :class:`Proxy`)."""
    return Proxy(config, key, checks=checks).app()


__all__ = ["INTERACTION_HEADER", "PROXY", "REPORTER_HEADER", "Proxy", "create_app",
           "load_check"]
