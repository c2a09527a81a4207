"""The access log of ``bureau serve --access-log text|json``: one line per answered
request, on standard output.

``json`` writes one JSON object a line, for a log pipeline to parse without a pattern:
``{"time", "pid", "remote", "method", "path", "status", "bytes", "seconds",
"user_agent"}``. ``path`` is the request's path and query as sent (key ids are public;
nothing in a query is secret). ``pid`` tells the processes of ``--workers N`` apart.
Off by default: at thousands of envelopes a second a line each is real work, and the
metrics already count every answer.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import sys

from aiohttp import web
from aiohttp.abc import AbstractAccessLogger

FORMATS = ("off", "text", "json")
LOGGER = "bureau.access"


class JsonAccessLogger(AbstractAccessLogger):
    def log(self, request: web.BaseRequest, response: web.StreamResponse,
            time: float) -> None:
        self.logger.info(json.dumps({
            "time": dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")
            .replace("+00:00", "Z"),
            "pid": os.getpid(), "remote": request.remote, "method": request.method,
            "path": request.path_qs, "status": response.status,
            "bytes": response.body_length, "seconds": round(time, 6),
            "user_agent": request.headers.get("User-Agent")}))


class TextAccessLogger(AbstractAccessLogger):
    def log(self, request: web.BaseRequest, response: web.StreamResponse,
            time: float) -> None:
        self.logger.info('%s pid %d %s "%s %s" %d %d %.6fs', dt.datetime.now(dt.UTC)
                         .isoformat(timespec="milliseconds").replace("+00:00", "Z"),
                         os.getpid(), request.remote, request.method, request.path_qs,
                         response.status, response.body_length, time)


def runner_options(fmt: str) -> dict[str, object]:
    """``web.AppRunner`` keyword arguments for ``--access-log fmt``."""
    if fmt == "off":
        return {"access_log": None}
    logger = logging.getLogger(LOGGER)
    if not logger.handlers:  # lines of their own on stdout, not the service's log format
        handler = logging.StreamHandler(sys.stdout)
        handler.setFormatter(logging.Formatter("%(message)s"))
        logger.addHandler(handler)
        logger.propagate = False
        logger.setLevel(logging.INFO)
    return {"access_log": logger,
            "access_log_class": JsonAccessLogger if fmt == "json" else TextAccessLogger}
