"""Plain HTTP calls through the proxy: one fact per call (docs/proxy.md, "What each fact
field means when the proxy fills it").

A call under a route that is not read as A2A or MCP is forwarded as it came (its
answer read whole, bounded by ``max_body`` and the route's ``timeout_seconds``),
measured — well-formedness against the route's schema, the agent's claim at the
route's pointer, the latency promises, the deliverable check — and its fact held on
disk before the caller has the answer, with the ``Bureau-Reporter`` and
``Bureau-Interaction`` headers a caller needs to attest. The caller's signature is
checked while the call is upstream (:mod:`reporters.proxy.callers`).
"""

from __future__ import annotations

import asyncio
import importlib
import logging
from collections.abc import Awaitable, Mapping

import aiohttp
import yarl
from aiohttp import web
from multidict import CIMultiDict

from reporters.protocols.answers import claimed
from reporters.proxy.callers import Callers
from reporters.proxy.holding import Measured
from reporters.proxy.measure import (
    Check,
    DeliverableCheck,
    Exchange,
    compile_schema,
    promises_kept,
    task_hash,
    well_formed,
)
from reporters.proxy.protocol_call import (
    FORWARD_FAILURES,
    ProtocolCall,
    ProxyServices,
    failure_kind,
    failure_response,
)
from reporters.proxy.relay import Buffered, TooLarge

log = logging.getLogger("reporters.proxy")


def load_check(spec: str) -> DeliverableCheck:
    """``module:function`` -> the function (a route's deliverable check)."""
    module, _, name = spec.partition(":")
    fn = getattr(importlib.import_module(module), name)
    if not callable(fn):
        raise ValueError(f"{spec} is not callable")
    check: DeliverableCheck = fn
    return check


class PlainCalls:
    """``checks`` maps a route prefix to a deliverable check (they override a route's
    ``check`` setting)."""

    def __init__(self, proxy: ProxyServices, callers: Callers,
                 checks: Mapping[str, DeliverableCheck]) -> None:
        self.proxy = proxy
        self.callers = callers
        routes = proxy.config.routes
        self._validators = {r.prefix: compile_schema(r.schema) for r in routes
                            if r.schema is not None}
        self._checks: dict[str, DeliverableCheck] = {
            r.prefix: load_check(r.check) for r in routes if r.check is not None}
        self._checks.update(checks)

    async def handle(self, call: ProtocolCall) -> web.Response:
        """Forward, measure, hold the fact, answer; ``call.caller`` is not known yet."""
        p, route, request = self.proxy, call.route, call.request
        interaction = p.next_interaction()
        forwarding: Awaitable[Buffered] = self._forward(call)
        caller = None
        if self.callers.signed(request):  # checked while the call is upstream
            forwarding = asyncio.ensure_future(forwarding)
            try:
                caller = await self.callers.while_upstream(request)
            except BaseException:
                forwarding.cancel()
                raise
        try:
            up: Buffered | None = await forwarding
            assert up is not None
            p.metrics.calls.labels(route.prefix, "answered").inc()
            p.metrics.upstream_seconds.labels(route.prefix).observe(up.latency_ms / 1000)
            failure: web.Response | None = None
        except FORWARD_FAILURES as exc:
            up, failure = None, failure_response(exc)
            p.metrics.calls.labels(route.prefix, failure_kind(exc)).inc()
        measured = self._measure(ProtocolCall(request, route, caller, call.wall, call.sub_path,
                                              call.query, call.body), up)
        satisfactory = up is not None and up.status < 400 and measured.well_formed is not False
        # On disk before the caller has the answer (and so the interaction id to attest).
        await p.facts.hold(interaction, measured,
                           task_hash(request.method, call.sub_path, call.query, call.body),
                           satisfactory)
        p.run.calls += 1
        if up is None:
            assert failure is not None
            failure.headers.update(p.marks(interaction))
            return failure
        return p.respond(up, p.marks(interaction))

    async def _forward(self, call: ProtocolCall) -> Buffered:
        p, request = self.proxy, call.request
        target = call.route.upstream + call.sub_path + ("?" + call.query if call.query else "")
        started = p.now()
        async with p.session.request(
                request.method, yarl.URL(target, encoded=True),
                headers=p.upstream_headers(request), data=call.body, allow_redirects=False,
                timeout=aiohttp.ClientTimeout(total=call.route.timeout_seconds)) as resp:
            chunks: list[bytes] = []
            size = 0
            async for chunk in resp.content.iter_chunked(64 * 1024):
                size += len(chunk)
                if size > p.config.max_body:
                    raise TooLarge
                chunks.append(chunk)
            return Buffered(resp.status, CIMultiDict(resp.headers), b"".join(chunks),
                            round((p.now() - started) * 1000))

    def _measure(self, call: ProtocolCall, up: Buffered | None) -> Measured:
        p, route, method = self.proxy, call.route, call.request.method
        bounds = p.config.promises.get(route.agent, {})
        observed_at = p.timestamp(call.wall)
        if up is None:
            return Measured(route.agent, call.caller, observed_at, False, None, None,
                            promises_kept(False, None, bounds), None, None)
        # A HEAD answer has no body by definition: nothing to judge.
        wf, doc = (None, None) if method == "HEAD" else well_formed(
            up.status, up.body, self._validators.get(route.prefix))
        claim = claimed(doc, route.claim.pointer, route.claim.values) if route.claim else None
        check: Check | None = None
        hook = self._checks.get(route.prefix)
        if hook is not None:
            try:
                check = hook(Exchange(method, call.sub_path, call.query, call.body, up.status,
                                      up.body, doc))
            except Exception:  # a broken check must not break the proxy or the call
                log.exception("deliverable check for %s failed", route.prefix)
        return Measured(route.agent, call.caller, observed_at, True, up.latency_ms, wf,
                        promises_kept(True, up.latency_ms, bounds), claim, check)
