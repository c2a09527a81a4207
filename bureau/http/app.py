"""``create_app(config, database_url, signing_key)``: the aiohttp application — the
service's one composition root — and ``create_ops_app(app)``, the operator
listener's. Every long-lived part is made, wired to the others and
stopped here, in ``cleanup_ctx`` order: the pool (and the read replica's, with
``BUREAU_READ_DATABASE_URL``: ``app[READS]``), the ledger's settings (its genesis
entry: ``app[CONFIG]`` then holds the ledger's values, the origin among them, which names
the bureau's key as the log's: ``app[LOG_KEY]``) and the ledger's committer, then the
tree-head publisher (which signs the current head before the first request), then the
sealer (whose seal hook the committer calls under its lock), then, with ``serve --mirror``,
the static mirror's writer, so that they stop in reverse."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from pathlib import Path

import nacl.signing
from aiohttp import web, web_response

from bureau.config import Config
from bureau.http import openapi, routes
from bureau.http.auth import nonce_store
from bureau.http.errors import error_middleware
from bureau.http.keys import (
    COMMITTER,
    CONFIG,
    DATABASE_URL,
    DB_POOL,
    FULL_TILES,
    INTAKE,
    LOG_KEY,
    MIRROR,
    NONCES,
    PUBLISHER,
    RANKING,
    READS,
    SEALER,
    SERVICE,
    SIGNING_KEY,
)
from bureau.http.routes import ops
from bureau.intake import genesis
from bureau.intake.clock import Clock, utcnow
from bureau.intake.committer import Committer
from bureau.intake.pipeline import MAX_BATCH_BYTES, Intake
from bureau.intake.sequencer import SequencerLink
from bureau.mirror.documents import Site
from bureau.mirror.sync import Mirror, MirrorTask
from bureau.reads.ranking import Ranking
from bureau.replica import ReadRouter, open_replica
from bureau.storage import db
from bureau.transparency.heads import LogKey
from bureau.transparency.publisher import Publisher
from bureau.transparency.tiles import FullTiles
from bureau.views.builder import ReportBuilder
from bureau.views.seal import Sealer

#: What the ``Server`` header says, instead of aiohttp's default that names the Python and
#: aiohttp versions (an attacker's shopping list). aiohttp has no setting for it, and its
#: own answers to requests that are not HTTP bypass every signal an application could
#: use, so the one default it reads is replaced, once, for the whole process.
SERVER_HEADER = "bureau"


def hide_server_version() -> None:
    web_response.SERVER_SOFTWARE = SERVER_HEADER  # type: ignore[attr-defined]


def create_app(config: Config, database_url: str, signing_key: nacl.signing.SigningKey,
               *, clock: Clock = utcnow, sequencer: Path | None = None) -> web.Application:
    """``sequencer``: the socket of the node's sequencer (``serve --workers N``), which
    commits this process's submissions while it answers (bureau.intake.sequencer)."""
    hide_server_version()
    # A little over the batch cap so the handlers, not aiohttp, give the TOO_LARGE answer.
    app = web.Application(middlewares=[error_middleware], client_max_size=MAX_BATCH_BYTES + 1024)
    app[CONFIG] = config
    app[SIGNING_KEY] = signing_key
    app[DATABASE_URL] = database_url
    app[NONCES] = nonce_store()
    app[RANKING] = Ranking()
    app[FULL_TILES] = FullTiles()
    # Started in this order, stopped in reverse (see the module's docstring).
    app.cleanup_ctx.append(functools.partial(_resources, clock=clock, sequencer=sequencer))
    app.cleanup_ctx.append(_publishing)
    app.cleanup_ctx.append(_sealing)
    app.cleanup_ctx.append(_mirroring)
    for table in routes.TABLES:
        app.add_routes(table)
    app.on_startup.append(openapi.publish)  # after every route: it describes them all
    return app


async def _resources(app: web.Application, *, clock: Clock,
                     sequencer: Path | None) -> AsyncIterator[None]:
    """First: the pool (and the replica's), the ledger's settings (its genesis entry:
    written on a new ledger, ruling from then on), the committer and intake."""
    config, database_url, signing_key = app[CONFIG], app[DATABASE_URL], app[SIGNING_KEY]
    pool = await db.create_pool(database_url)
    try:
        async with pool.acquire() as conn:
            await db.migrate(conn)
            # The ledger's own settings rule from here on (bureau.intake.genesis).
            settled = await genesis.establish(conn, config, signing_key.verify_key, clock())
            assert settled.origin is not None  # the genesis entry's
            log_key = LogKey.of(settled.origin, signing_key)
        replica = (None if config.read_database_url is None
                   else await open_replica(config.read_database_url, pool))
    except BaseException:
        await pool.close()
        raise
    app[CONFIG], app[LOG_KEY] = settled, log_key
    reads = ReadRouter(pool, replica, config.read_wait)
    committer = Committer(database_url, settled, clock)
    await committer.start()
    link = None if sequencer is None else SequencerLink(sequencer)
    intake = Intake(committer, sequencer=link)
    app[DB_POOL], app[READS], app[COMMITTER], app[INTAKE] = pool, reads, committer, intake
    try:
        yield
    finally:
        if link is not None:
            await link.close()
        await committer.stop()
        intake.close()
        await reads.close()
        await pool.close()


async def _publishing(app: web.Application) -> AsyncIterator[None]:
    """After the pool: the tree-head publisher. It signs the current head now, so
    that GET /checkpoint has a note before the first request (and refuses to start
    on a ledger that does not extend what was published)."""
    settled = app[CONFIG]
    publisher = Publisher(app[DB_POOL], app[LOG_KEY], settled.checkpoint_interval,
                          settled.witnesses)
    await publisher.start()
    app[PUBLISHER] = publisher
    try:
        yield
    finally:
        await publisher.stop()


async def _sealing(app: web.Application) -> AsyncIterator[None]:
    """After the pool and the committer exist: the sealer, which seals epochs and has
    their reports built; the committer calls its seal hook when an admin ``seal`` is
    admitted. Stopped before the committer and the pool go."""
    committer, settled = app[COMMITTER], app[CONFIG]
    builder = ReportBuilder(app[SIGNING_KEY], app[LOG_KEY], workers=settled.report_workers,
                            dsn=app[DATABASE_URL])
    sealer = Sealer(app[DB_POOL], committer, builder, settled, committer.clock)
    committer.seal_hook = sealer.on_seal_request
    app[SEALER] = sealer
    await sealer.start()
    try:
        yield
    finally:
        committer.seal_hook = None
        await sealer.stop()


async def _mirroring(app: web.Application) -> AsyncIterator[None]:
    """With ``serve --mirror DIR``, last: the static mirror's writer (one process
    writes it; it reads what the others publish)."""
    settled = app[CONFIG]
    if settled.mirror_dir is None:
        yield
        return
    site = Site(app[LOG_KEY].origin, settled.epoch_seconds, settled.public_url,
                settled.eth_address)
    task = MirrorTask(app[DB_POOL], Mirror(settled.mirror_dir, site))
    app[MIRROR] = task
    await task.start()
    try:
        yield
    finally:
        await task.stop()


def create_ops_app(service: web.Application) -> web.Application:
    """The operator listener (``bureau serve --ops-port``): ``/healthz``, ``/readyz`` and
    ``/metrics`` (SPEC §9), in the one error shape; ``/readyz`` asks ``service``'s pool."""
    hide_server_version()
    app = web.Application(middlewares=[error_middleware])
    app[SERVICE] = service
    app.add_routes(ops.ops_routes)
    return app
