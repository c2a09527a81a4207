"""Operator routes: liveness, readiness, Prometheus metrics."""

from __future__ import annotations

import prometheus_client
from aiohttp import web

from bureau import db
from bureau.errors import BureauError, Code, Pushback
from bureau.http.keys import POOL

routes = web.RouteTableDef()


@routes.get("/healthz")
async def healthz(request: web.Request) -> web.Response:
    """The process is up and serving HTTP."""
    return web.json_response({"status": "ok"})


@routes.get("/readyz")
async def readyz(request: web.Request) -> web.Response:
    """The database answers: this process can take evidence."""
    if not await db.is_reachable(request.app[POOL]):
        raise BureauError(Code.UNAVAILABLE, "", "database unreachable",
                          pushback=Pushback.DATABASE_UNREACHABLE)
    return web.json_response({"status": "ready"})


@routes.get("/metrics")
async def metrics_route(request: web.Request) -> web.Response:
    body = prometheus_client.generate_latest()
    return web.Response(body=body, headers={"Content-Type": prometheus_client.CONTENT_TYPE_LATEST})
