"""``create_app(config, database_url)``: the aiohttp application and its resources."""

from __future__ import annotations

from collections.abc import AsyncIterator

import nacl.signing
from aiohttp import web

from bureau import db
from bureau.config import Config
from bureau.http import openapi, routes
from bureau.http.errors import error_middleware
from bureau.http.keys import CONFIG, DATABASE_URL, INTAKE, LEDGER, NONCES, POOL, SIGNING_KEY
from bureau.http.routes import reports as report_routes
from bureau.intake.ledger import Clock, Ledger, utcnow
from bureau.intake.pipeline import MAX_BATCH_BYTES, Intake
from reporters.httpsig import NonceStore


def create_app(config: Config, database_url: str, signing_key: nacl.signing.SigningKey,
               *, clock: Clock = utcnow) -> web.Application:
    # A little over the batch cap so the handlers, not aiohttp, give the TOO_LARGE answer.
    app = web.Application(middlewares=[error_middleware], client_max_size=MAX_BATCH_BYTES + 1024)
    app[CONFIG] = config
    app[SIGNING_KEY] = signing_key
    app[DATABASE_URL] = database_url
    app[NONCES] = NonceStore()

    async def resources(app: web.Application) -> AsyncIterator[None]:
        pool = await db.create_pool(database_url)
        async with pool.acquire() as conn:
            await db.migrate(conn)
        ledger = Ledger(pool, config, clock)
        await ledger.start()
        intake = Intake(ledger)
        app[POOL], app[LEDGER], app[INTAKE] = pool, ledger, intake
        try:
            yield
        finally:
            await ledger.stop()
            intake.close()
            await pool.close()

    app.cleanup_ctx.append(resources)
    app.cleanup_ctx.append(report_routes.settler_ctx)  # seals epochs, builds reports
    for table in routes.TABLES:
        app.add_routes(table)
    app.on_startup.append(openapi.publish)  # after every route: it describes them all
    return app
