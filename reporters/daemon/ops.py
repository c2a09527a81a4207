"""A daemon's own routes — the proxy's, the OTLP receiver's and the prober's: liveness,
readiness and metrics (docs/proxy.md, "Operating it"); and what each of them does around
its listeners: the address a runner bound, the signals that stop it.

* ``/healthz`` — 200 while the process serves HTTP.
* ``/readyz`` — 200 when the whole reporting path works: the daemon has started (its
  spool is open, held facts taken back) and is not stopping, and the bureau answers its
  own ``/readyz`` with 200 within 2 s. Otherwise 503, in the bureau's error shape, with
  ``detail`` saying which part is missing. Calls are forwarded and their facts kept on
  disk while the bureau is away, so gate traffic on ``/healthz`` and alert on
  ``/readyz`` if the gateway must keep working through a bureau outage.
* ``/metrics`` — the daemon's own Prometheus registry (the proxy's is
  :mod:`reporters.proxy.metrics`).

All three are served on the ops listener; ``/healthz`` and ``/readyz`` also on the
proxy's own port, where ``/metrics`` is answered 404. None of them is ever forwarded.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Awaitable, Callable
from typing import Protocol

import aiohttp
from aiohttp import web


class _Exposition(Protocol):
    def exposition(self) -> bytes: ...


class Daemon(Protocol):
    """What these routes ask of a daemon (:class:`reporters.proxy.app.Proxy`,
    :class:`reporters.otlp.receiver.Receiver`, :class:`reporters.prober.runner.Prober`); a
    protocol, so that this module imports none of them."""

    @property
    def serving(self) -> bool: ...
    @property
    def metrics(self) -> _Exposition: ...
    async def bureau_ready(self) -> str | None: ...

def bound(runner: web.AppRunner) -> str:
    """``host:port`` a runner's site listens on (the real port when 0 was asked for)."""
    host, port = runner.addresses[0][:2]
    return f"{host}:{port}"


def stop_on_signals() -> tuple[asyncio.Event, list[str]]:
    """An event set at SIGTERM or SIGINT, and the names of the signals received (the
    running loop's handlers: ``bureau-reporter``'s commands stop this way)."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    received: list[str] = []

    def on_signal(sig: signal.Signals) -> None:
        received.append(sig.name)
        stop.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, on_signal, sig)
    return stop, received


async def bureau_readiness(session: aiohttp.ClientSession | None, bureau_url: str) -> str | None:
    """``None`` when the bureau answers its ``/readyz`` with 200 within 2 s, else why
    not (for a ``/readyz`` of our own: the proxy's, the prober's)."""
    if session is None:
        return "not started"
    try:
        async with session.get(bureau_url + "/readyz",
                               timeout=aiohttp.ClientTimeout(total=2)) as resp:
            if resp.status == 200:
                return None
            return f"the bureau at {bureau_url} answered /readyz {resp.status}"
    except (TimeoutError, aiohttp.ClientError) as exc:
        return f"the bureau at {bureau_url} did not answer /readyz: {type(exc).__name__}"


_OWN_METHODS = frozenset({"GET", "HEAD"})

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _refusal(status: int, code: str, detail: str) -> web.Response:
    return web.json_response({"status": "rejected", "code": code, "path": "",
                              "detail": detail}, status=status)


def _get_only(request: web.Request) -> web.Response | None:
    if request.method not in _OWN_METHODS:
        return _refusal(405, "NOT_FOUND", f"{request.path} answers GET only")
    return None


async def _not_found(request: web.Request) -> web.Response:
    return _refusal(404, "NOT_FOUND", "the ops listener serves /healthz, /readyz, /metrics")


def _handlers(daemon: Daemon) -> dict[str, Handler]:
    async def healthz(request: web.Request) -> web.Response:
        return _get_only(request) or web.json_response({"status": "ok"})

    async def readyz(request: web.Request) -> web.Response:
        refused = _get_only(request)
        if refused is not None:
            return refused
        if not daemon.serving:
            return _refusal(503, "UNAVAILABLE", "the proxy is starting or stopping")
        why = await daemon.bureau_ready()
        if why is not None:
            return _refusal(503, "UNAVAILABLE", why)
        return web.json_response({"status": "ready"})

    async def metrics(request: web.Request) -> web.Response:
        # Here, not at the top: the commands' parsers import this module, and keygen
        # runs without the proxy extra (prometheus-client).
        from prometheus_client import CONTENT_TYPE_LATEST

        return _get_only(request) or web.Response(
            body=daemon.metrics.exposition(), headers={"Content-Type": CONTENT_TYPE_LATEST})

    return {"/healthz": healthz, "/readyz": readyz, "/metrics": metrics}


def add_own_routes(app: web.Application, proxy: Daemon) -> None:
    """On the proxy's own port: ``/healthz`` and ``/readyz``; ``/metrics`` is 404 there.
    Added before the catch-all route, for every method, so none of them is forwarded."""
    handlers = _handlers(proxy)

    async def not_here(request: web.Request) -> web.Response:
        return _refusal(404, "NOT_FOUND", "metrics are served on the ops listener only")

    app.router.add_route("*", "/healthz", handlers["/healthz"])
    app.router.add_route("*", "/readyz", handlers["/readyz"])
    app.router.add_route("*", "/metrics", not_here)


def ops_app(daemon: Daemon) -> web.Application:
    """The ops listener: the three routes, and 404 for anything else."""
    app = web.Application()
    for path, handler in _handlers(daemon).items():
        app.router.add_route("*", path, handler)
    app.router.add_route("*", "/{tail:.*}", _not_found)
    return app

