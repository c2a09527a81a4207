"""The service's listener, as ``bureau serve`` runs it: aiohttp's runner with a deadline
for each request's head (reporters.daemon.deadlines, the proxy's), and the access log.

A client that trickles its head (a slow-loris) held its connection for as long as it
kept sending, and one complete request then silence held it for aiohttp's keep-alive of
an hour (issue 33, after issue 35 found both at the proxy). Now the head must be in
within ``BUREAU_HEADER_SECONDS`` (10) of its first byte, or of the connection's opening,
else the connection is closed without an answer and ``bureau_http_late_heads_total``
counts it; an idle connection is kept that long and no longer. The body has intake's
own deadline (bureau.http.routes.intake).
"""

from __future__ import annotations

from aiohttp import web

from bureau import metrics
from bureau.http.access_log import runner_options
from reporters.daemon.deadlines import DeadlineRunner


def _late(limit: str) -> None:
    metrics.LATE_HEADS_TOTAL.inc()


def service_runner(app: web.Application, header_seconds: float,
                   access_log: str = "off") -> web.AppRunner:
    """The runner of the service's port: ``app`` with the head deadline
    ``header_seconds`` (the keep-alive too) and ``serve --access-log``'s format."""
    return DeadlineRunner(app, header_seconds, _late, **runner_options(access_log))
