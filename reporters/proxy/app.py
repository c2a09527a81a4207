"""The reporting proxy: an aiohttp reverse proxy that reports one fact per call.

For each call under a configured route prefix it (1) reads the request, (2) learns the
caller from an RFC 9421 signature if there is a valid one (never refusing the call
otherwise), (3) forwards it to the route's upstream, (4) answers the caller with the
upstream's answer plus ``Bureau-Reporter``/``Bureau-Interaction`` headers (a caller needs
both to attest), (5) measures the answer, and (6) hands the call to the derived-outcome
tracker, which holds the fact until its ``derived`` is known. A background task sends
released facts through :class:`reporters.Reporter`, whose spool makes them durable.

What a crash loses: facts still *held* by the tracker (at most ``quiet_seconds`` of
unsatisfactory threads, ``settle_seconds`` of the rest) — they are in memory only.
A graceful stop releases them with what is known (docs/proxy.md).
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

import aiohttp
import nacl.signing
import yarl
from aiohttp import web
from multidict import CIMultiDict, CIMultiDictProxy

from reporters import Rejection, Reporter, key_id
from reporters._internal.errors import BureauClientError
from reporters.httpsig import HttpSignatureError, NonceStore, verify_request
from reporters.proxy.config import ProxyConfig, Route
from reporters.proxy.ids import InteractionIds
from reporters.proxy.measure import (
    Check,
    Claimed,
    DeliverableCheck,
    Exchange,
    claimed,
    compile_schema,
    promises_kept,
    task_hash,
    well_formed,
)
from reporters.proxy.tracker import Call, DerivedOutcomes, Settled

log = logging.getLogger("reporters.proxy")

INTERACTION_HEADER = "Bureau-Interaction"
REPORTER_HEADER = "Bureau-Reporter"

# RFC 9110 §7.6.1 hop-by-hop fields, plus what aiohttp recomputes for us.
_HOP_BY_HOP = frozenset({
    "connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "proxy-connection",
    "te", "trailer", "trailers", "transfer-encoding", "upgrade", "host", "content-length"})


def _forwardable(headers: CIMultiDictProxy[str] | CIMultiDict[str],
                 extra_drop: frozenset[str] = frozenset()) -> CIMultiDict[str]:
    """``headers`` less the hop-by-hop fields, including those ``Connection`` names."""
    named = {t.strip().lower() for v in headers.getall("Connection", []) for t in v.split(",")}
    drop = _HOP_BY_HOP | named | extra_drop
    out: CIMultiDict[str] = CIMultiDict()
    for name, value in headers.items():
        if name.lower() not in drop:
            out.add(name, value)
    return out


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


@dataclass(frozen=True, slots=True)
class _Measured:
    """Everything of a fact but ``derived``, kept while the tracker holds it."""

    agent: str
    caller: str | None
    observed_at: str
    answered: bool
    latency_ms: int | None
    well_formed: bool | None
    promises: Mapping[str, bool]
    claimed: Claimed | None
    check: Check | None


@dataclass(frozen=True, slots=True)
class _Upstream:
    status: int
    headers: CIMultiDict[str]
    body: bytes
    latency_ms: int


class _TooLarge(Exception):
    pass


class Proxy:
    """One running proxy. ``checks`` maps a route prefix to a deliverable check (they
    override a route's ``check`` setting); ``clock`` is monotonic seconds for the
    tracker, ``wall`` Unix seconds for ``observed_at`` and signature freshness."""

    def __init__(self, config: ProxyConfig, key: nacl.signing.SigningKey, *,
                 checks: Mapping[str, DeliverableCheck] | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 wall: Callable[[], float] = time.time) -> None:
        self.config = config
        self.reporter = Reporter(key, config.bureau_url, config.spool_dir,
                                 on_rejection=self._rejected)
        self.tracker = DerivedOutcomes(clock, window=config.settle_seconds,
                                       quiet=config.quiet_seconds)
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
        self._held: dict[str, _Measured] = {}
        self._ready: list[Settled] = []
        self._wake = asyncio.Event()
        self._ids: InteractionIds | None = None
        self._session: aiohttp.ClientSession | None = None
        self._task: asyncio.Task[None] | None = None
        self._stopping = False

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        await self.reporter.start()  # takes the spool lock: one proxy per spool dir
        self._ids = InteractionIds(self.config.spool_dir, self.proxy_id)
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0), cookie_jar=aiohttp.DummyCookieJar())
        self._task = asyncio.create_task(self._release_loop(), name="proxy-release")

    async def close(self) -> None:
        """Stop: release every held fact with what is known, spool them, close."""
        if self._task is not None:
            # Not cancelled: a fact taken off the queue must reach the spool.
            self._stopping = True
            self._wake.set()
            await self._task
            self._task = None
        self._ready.extend(self.tracker.drain())
        await self._send_ready()
        if self._session is not None:
            await self._session.close()
        await self.reporter.close()

    async def settle(self, *, release: bool = False) -> None:
        """Wait until no fact is held or queued and the bureau has answered for every
        spooled one (tests, the simulation, a gateway draining before a deploy).
        ``release``: do not wait out the windows; release held facts as :meth:`close`
        would."""
        if release:
            self._ready.extend(self.tracker.drain())
        while self._held or self._ready:
            self._wake.set()
            await asyncio.sleep(0.02)
        await self.reporter.flush()

    def app(self) -> web.Application:
        app = web.Application(client_max_size=self.config.max_body)
        app[PROXY] = self

        async def lifetime(_: web.Application) -> AsyncIterator[None]:
            await self.start()
            yield
            await self.close()

        app.cleanup_ctx.append(lifetime)
        app.router.add_route("*", "/{tail:.*}", self.handle)
        return app

    # ------------------------------------------------------------------ the call

    async def handle(self, request: web.Request) -> web.StreamResponse:
        raw_path, _, raw_query = request.raw_path.partition("?")
        route = self.config.route_for(raw_path)
        if route is None:
            return web.json_response({"status": "rejected", "code": "NOT_FOUND", "path": "",
                                      "detail": "no route for this path"}, status=404)
        body = await request.read()
        caller = self._caller(request)
        sub_path = raw_path[len(route.prefix):] or "/"
        assert self._ids is not None
        interaction = self._ids.next()
        wall = self._wall()
        try:
            up: _Upstream | None = await self._forward(request, route, sub_path, raw_query, body)
            failure: web.Response | None = None
        except (TimeoutError, aiohttp.ClientError, _TooLarge) as exc:
            up, failure = None, self._failure(exc)
        measured = self._measure(route, caller, wall, request.method, sub_path, raw_query,
                                 body, up)
        self._held[interaction] = measured
        satisfactory = up is not None and up.status < 400 and measured.well_formed is not False
        # The tracker's time is when the caller got its answer: a retry follows that.
        self._ready.extend(self.tracker.observe(Call(
            interaction, route.agent, caller,
            task_hash(request.method, sub_path, raw_query, body), satisfactory, self._clock())))
        self._wake.set()
        marks = {REPORTER_HEADER: self.reporter.key_id, INTERACTION_HEADER: interaction}
        if up is None:
            assert failure is not None
            failure.headers.update(marks)
            return failure
        headers = _forwardable(up.headers, frozenset({"content-encoding"}))
        headers.update(marks)
        return web.Response(status=up.status, body=up.body, headers=headers)

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
        headers = _forwardable(request.headers)
        forwarded_for = request.headers.get("X-Forwarded-For")
        peer = request.remote or "unknown"
        headers["X-Forwarded-For"] = f"{forwarded_for}, {peer}" if forwarded_for else peer
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
                 sub_path: str, query: str, body: bytes, up: _Upstream | None) -> _Measured:
        bounds = self.config.promises.get(route.agent, {})
        if up is None:
            return _Measured(route.agent, caller, _timestamp(wall), False, None, None,
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
        return _Measured(route.agent, caller, _timestamp(wall), True, up.latency_ms, wf,
                         promises_kept(True, up.latency_ms, bounds), claim, check)

    # ------------------------------------------------------------------ reporting

    async def _release_loop(self) -> None:
        tick = min(1.0, self.config.settle_seconds / 4)
        while not self._stopping:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), tick)
            self._wake.clear()
            self._ready.extend(self.tracker.due())
            await self._send_ready()

    async def _send_ready(self) -> None:
        ready, self._ready = self._ready, []
        try:
            # Concurrent sends share one spool transaction (group commit): one fsync, not N.
            await asyncio.gather(*(self._send_one(s) for s in ready))
        except asyncio.CancelledError:
            # Torn down mid-way: whatever was not spooled goes back on the queue.
            queued = {s.interaction for s in self._ready}
            self._ready += [s for s in ready
                            if s.interaction in self._held and s.interaction not in queued]
            raise

    async def _send_one(self, settled: Settled) -> None:
        m = self._held.get(settled.interaction)
        if m is None:
            return
        try:
            fact = self.reporter.fact(
                settled.interaction, m.agent, observed_at=m.observed_at,
                answered=m.answered, caller=m.caller, latency_ms=m.latency_ms,
                well_formed=m.well_formed, promises=m.promises, claimed=m.claimed,
                check=m.check, derived=settled.derived)
            await self.reporter.send(fact)
        except BureauClientError as exc:
            log.error("fact %s not spooled: %s %s", settled.interaction, exc.code, exc.detail)
        # Only now: settle() must not see "nothing held" before the fact is spooled.
        del self._held[settled.interaction]

    @staticmethod
    def _rejected(rejection: Rejection) -> None:
        log.warning("the bureau refused a fact: %s at %s: %s", rejection.code, rejection.path,
                    rejection.detail)


PROXY = web.AppKey("reporters.proxy", Proxy)


def create_app(config: ProxyConfig, key: nacl.signing.SigningKey, *,
               checks: Mapping[str, DeliverableCheck] | None = None) -> web.Application:
    """The proxy as an aiohttp application (``app[PROXY]`` is the :class:`Proxy`)."""
    return Proxy(config, key, checks=checks).app()


__all__ = ["INTERACTION_HEADER", "PROXY", "REPORTER_HEADER", "Proxy", "create_app",
           "load_check"]
