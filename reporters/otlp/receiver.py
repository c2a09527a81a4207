"""The OTLP receiver: OTLP/HTTP ``POST /v1/traces`` in, facts out (docs/proxy.md).

Per export request: (1) read the body (at most ``max_body``, its head within
``header_seconds`` and the body within ``body_seconds``: :mod:`reporters.daemon.deadlines`),
(2) inflate it, count what it decodes to before building it (:mod:`reporters.otlp.bounds`:
over a bound is a 413 naming it), decode it with opentelemetry-proto's types
(:mod:`reporters.otlp.decode`: a body that is not OTLP is a 400 with the reason), and
(3) map every span (:mod:`reporters.otlp.mapping`) — (2) and (3) off the event loop for
anything but a small plain body (:mod:`reporters.otlp.work`) — (4) sign
the facts and spool them in **one** transaction and one fsync, (5) answer 200 — with
``partial_success`` when agent spans were not mapped — only once they are on disk. The
exporter's retry of a request it got no answer for spools the same envelopes again,
which the spool and the bureau both recognise as the same: nothing is lost once
acknowledged, nothing is entered twice.

One fsync per request, not per span, and no model validation per span: an earlier
attempt that validated and spooled span by span reached 417 spans/s; this path is
measured by bench/proxy_bench.py (the "OTLP receiver" row).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import nacl.signing
from aiohttp import web

from reporters import Rejection, Reporter
from reporters._internal.errors import BureauClientError
from reporters._internal.outcomes import Delivery
from reporters.daemon import ops
from reporters.daemon.deadlines import BodyLate, DeadlineRunner, read_body
from reporters.otlp.config import OtlpConfig
from reporters.otlp.decode import NotOtlp, encode_response, error_status
from reporters.otlp.mapping import Mapped
from reporters.otlp.metrics import OtlpMetrics
from reporters.otlp.work import Decoder, Refused, Request, Rules, decode_and_map, inline

log = logging.getLogger("reporters.otlp")

TRACES_PATH = "/v1/traces"
#: distinct unmapped agents logged (after that, the metric alone counts them)
_LOGGED_UNMAPPED = 1000
_STATUS_RESULTS = {400: "not_otlp", 408: "too_slow", 413: "too_large", 415: "unsupported",
                   503: "unavailable"}


class Receiver:
    """One running receiver; :meth:`app` is its OTLP/HTTP application, :meth:`ops_app`
    its ops listener."""

    def __init__(self, config: OtlpConfig, key: nacl.signing.SigningKey) -> None:
        self.config = config
        self.metrics = OtlpMetrics()
        self.reporter = Reporter(key, config.bureau_url, config.spool_dir,
                                 on_rejection=self._rejected, on_delivery=self._delivered,
                                 keep_delivered=config.keep_delivered_days * 86400)
        self.metrics.watch(lambda: self.reporter.pending)
        self.serving = False
        self._logged: set[str] = set()
        self._session: aiohttp.ClientSession | None = None
        self._rules = Rules(config.max_body, config.limits, config.subjects, config.promises)
        self.decoder = Decoder(config.decode_queue)

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Open the spool (one receiver per spool directory) and start delivering."""
        await self.reporter.start()
        self.decoder.start()
        self._session = aiohttp.ClientSession()  # for /readyz's look at the bureau
        self.serving = True

    async def close(self) -> None:
        """Deliver the spool for at most ``drain_seconds``, then close; what is left
        stays on disk for the next start."""
        self.serving = False
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.reporter.flush(), self.config.drain_seconds)
        if self.reporter.pending:
            log.info("stopped with %d facts in the spool %s: the next start sends them",
                     self.reporter.pending, self.config.spool_dir)
        if self._session is not None:
            await self._session.close()
        await asyncio.to_thread(self.decoder.close)
        await self.reporter.close()

    def app(self) -> web.Application:
        app = web.Application(client_max_size=self.config.max_body)
        app[RECEIVER] = self

        async def lifetime(_: web.Application) -> AsyncIterator[None]:
            await self.start()
            yield
            await self.close()

        app.cleanup_ctx.append(lifetime)
        app.router.add_post(TRACES_PATH, self.handle)
        return app

    def runner(self, **kwargs: Any) -> web.AppRunner:
        """A runner for :meth:`app` that leaves ``Content-Encoding`` to the receiver
        (aiohttp would inflate gzip itself, unbounded by the receiver's limit and with
        its own error answers) and holds the head deadline: the way to serve it."""
        return DeadlineRunner(self.app(), self.config.header_seconds, self._late,
                              auto_decompress=False, **kwargs)

    def _late(self, limit: str) -> None:
        self.metrics.limits.labels(limit).inc()

    def ops_app(self) -> web.Application:
        return ops.ops_app(self)

    async def bureau_ready(self) -> str | None:
        return await ops.bureau_readiness(self._session, self.config.bureau_url)

    # ------------------------------------------------------------------ the request

    async def handle(self, request: web.Request) -> web.Response:
        content_type = request.headers.get("Content-Type", "")
        try:
            body = await read_body(request, self.config.body_seconds)
        except web.HTTPRequestEntityTooLarge:
            return self._refuse(NotOtlp(413, f"the body is over {self.config.max_body} bytes"))
        except BodyLate as exc:
            return self._refuse(Refused(408, str(exc), "body_seconds"))
        export = Request(body, request.headers.get("Content-Encoding", ""), content_type)
        del body
        try:
            if inline(export):
                mapped = decode_and_map(export, self._rules)
            else:
                mapped = await self.decoder.run(lambda: decode_and_map(export, self._rules))
        except NotOtlp as exc:
            return self._refuse(exc)
        try:
            await self.reporter.send_facts(mapped.facts)
        except BureauClientError as exc:  # the spool is closing or failing: retry later
            self.metrics.requests.labels("unavailable").inc()
            log.warning("could not spool %d facts (%s: %s); answered 503",
                        len(mapped.facts), exc.code, exc.detail)
            text, kind = error_status(f"the spool could not take the facts: {exc.detail}")
            return web.Response(status=503, body=text, content_type=kind,
                                headers={"Retry-After": "1"})
        self._count(mapped)
        text, kind = encode_response(mapped.rejected, _why(mapped), content_type)
        return web.Response(body=text, content_type=kind)

    def _refuse(self, exc: NotOtlp) -> web.Response:
        self.metrics.requests.labels(_STATUS_RESULTS.get(exc.status, "not_otlp")).inc()
        headers = {}
        if isinstance(exc, Refused):
            self.metrics.limits.labels(exc.limit).inc()
            if exc.status == 503:
                headers["Retry-After"] = "1"
        text, kind = error_status(exc.reason)
        return web.Response(status=exc.status, body=text, content_type=kind, headers=headers)

    def _count(self, mapped: Mapped) -> None:
        m = self.metrics
        m.requests.labels("partial" if mapped.rejected else "accepted").inc()
        m.spans.labels("mapped").inc(len(mapped.facts))
        m.spans.labels("ignored").inc(mapped.ignored)
        m.spans.labels("not_mapped").inc(mapped.rejected)
        for reason, n in mapped.not_mapped.items():
            m.not_mapped.labels(reason).inc(n)
        for agent in mapped.unmapped_agents:
            if agent not in self._logged and len(self._logged) < _LOGGED_UNMAPPED:
                self._logged.add(agent)
                log.warning("an agent span names no agent of the config (%s): not reported; "
                            "add it to agent_ids, agent_names or server_addresses", agent)

    # ------------------------------------------------------------------ reporting

    def _delivered(self, d: Delivery) -> None:
        m = self.metrics
        if d.failure is not None:
            m.delivery_failures.labels(d.failure).inc()
            return
        m.delivered.labels("accepted").inc(d.accepted)
        m.delivered.labels("duplicate").inc(d.duplicate)

    def _rejected(self, rejection: Rejection) -> None:
        self.metrics.rejected.labels(rejection.code).inc()
        log.warning("the bureau refused a fact: %s at %s: %s", rejection.code, rejection.path,
                    rejection.detail)


def _why(mapped: Mapped) -> str:
    """``partial_success.error_message``: how many agent spans were not mapped, and why."""
    if not mapped.rejected:
        return ""
    reasons = ", ".join(f"{n} {reason}" for reason, n in sorted(mapped.not_mapped.items()))
    example = f" (e.g. {mapped.unmapped_agents[0]})" if mapped.unmapped_agents else ""
    return f"{mapped.rejected} agent spans not reported: {reasons}{example}"


RECEIVER = web.AppKey("reporters.otlp", Receiver)

__all__ = ["RECEIVER", "TRACES_PATH", "Receiver"]
