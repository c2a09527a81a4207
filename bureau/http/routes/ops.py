"""Operator routes: liveness, readiness, Prometheus metrics (SPEC §9, §10).

* ``routes`` — on the public port: ``/healthz`` and ``/readyz``.
* ``ops_routes`` — on the operator listener (``bureau serve --ops-host/--ops-port``,
  default 127.0.0.1:9464): the same two, and ``/metrics``, which is never served on the
  public port (it names routes, codes and rates an outsider has no business seeing).

The operator listener is an application of its own (:func:`bureau.http.app.create_ops_app`);
its ``/readyz`` asks the service application's pool (``SERVICE``).
"""

from __future__ import annotations

import logging

import prometheus_client
from aiohttp import web

from bureau import ledger_keys
from bureau import metrics as bureau_metrics
from bureau.errors import BureauError, Code, Pushback
from bureau.http.keys import COMMITTER, CONFIG, DB_POOL, LOG_KEY, SERVICE
from bureau.storage import db
from bureau.storage.reports import seal_status

log = logging.getLogger("bureau.ops")

routes = web.RouteTableDef()
ops_routes = web.RouteTableDef()


async def healthz(request: web.Request) -> web.Response:
    """The process is up and serving HTTP."""
    return web.json_response({"status": "ok"})


async def readyz(request: web.Request) -> web.Response:
    """The database answers: this process can take evidence."""
    service = request.app.get(SERVICE, request.app)
    pool = service.get(DB_POOL)
    if pool is None:
        raise BureauError(Code.UNAVAILABLE, "", "the service has no database pool yet",
                          pushback=Pushback.DATABASE_UNREACHABLE)
    if not await db.is_reachable(pool):
        raise BureauError(Code.UNAVAILABLE, "", "database unreachable",
                          pushback=Pushback.DATABASE_UNREACHABLE)
    if LOG_KEY in service:  # SPEC §3 r3: a process whose key was rotated away is not ready
        async with pool.acquire() as conn:
            in_force = await ledger_keys.latest_key(conn)
        ours = service[LOG_KEY].key_id
        if in_force is not None and in_force != ours:
            raise BureauError(Code.UNAVAILABLE, "", f"this process signs with {ours}, but "
                              f"the key in force is {in_force}: restart it with that key's "
                              "file", pushback=Pushback.KEY_NOT_IN_FORCE)
    return web.json_response({"status": "ready"})


async def metrics(request: web.Request) -> web.Response:
    """The bureau's Prometheus metrics: with ``--workers N`` every process's, added up
    (:func:`bureau.metrics.exposition`), whichever process the kernel hands the scrape
    to; and the seal gauges, read from the ledger at each scrape."""
    service = request.app.get(SERVICE, request.app)
    last_seal: float | None = None
    lag: float | None = None
    pool = service.get(DB_POOL)
    if pool is not None and COMMITTER in service:
        try:
            async with pool.acquire() as conn:
                status = await seal_status(conn)
        except db.QUERY_ERRORS:
            log.warning("metrics: the database did not answer; no seal gauges this scrape")
        else:
            if status.sealed_at is not None:
                last_seal = status.sealed_at.timestamp()
            lag = status.lag(service[COMMITTER].clock(), service[CONFIG].epoch_seconds)
    body = bureau_metrics.exposition(bureau_metrics.scraped_gauges(last_seal, lag))
    return web.Response(body=body, headers={"Content-Type": prometheus_client.CONTENT_TYPE_LATEST})


for table in (routes, ops_routes):
    table.get("/healthz")(healthz)
    table.get("/readyz")(readyz)
ops_routes.get("/metrics")(metrics)
