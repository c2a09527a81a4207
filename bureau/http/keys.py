"""Every typed application state key (no module globals); :mod:`bureau.http.app`
fills them all."""

from __future__ import annotations

import nacl.signing
from aiohttp import web

from bureau.config import Config
from bureau.intake.committer import Committer
from bureau.intake.pipeline import Intake
from bureau.mirror.sync import MirrorTask
from bureau.reads.ranking import Ranking
from bureau.replica import ReadRouter
from bureau.storage import db
from bureau.transparency.heads import LogKey
from bureau.transparency.publisher import Publisher
from bureau.transparency.tiles import FullTiles
from bureau.views.seal import Sealer
from reporters.httpsig import NonceStore

CONFIG = web.AppKey("config", Config)
DB_POOL = web.AppKey("pool", db.Pool)
# Where the public documents and the parties' files are read: the primary, or a
# streaming replica (BUREAU_READ_DATABASE_URL; bureau.replica).
READS = web.AppKey("reads", ReadRouter)
COMMITTER = web.AppKey("committer", Committer)
INTAKE = web.AppKey("intake", Intake)
SIGNING_KEY = web.AppKey("signing_key", nacl.signing.SigningKey)
# Where the database is, for processes of our own that connect to it (report workers).
DATABASE_URL = web.AppKey("database_url", str)
# Authenticated reads (bureau.http.auth): the nonces already accepted by this process.
NONCES = web.AppKey("nonces", NonceStore)
# GET /openapi.json: the document, built once when the app starts (bureau.http.openapi).
OPENAPI = web.AppKey("openapi", bytes)
# The sealer: seals elapsed epochs and has their reports built (bureau.views.seal).
SEALER = web.AppKey("sealer", Sealer)
# The bureau's key as the log's (origin, note signer, vkey): bureau.transparency.heads.
LOG_KEY = web.AppKey("log_key", LogKey)
# Signs a tree head every few seconds and pushes it to the witnesses (one process leads).
PUBLISHER = web.AppKey("publisher", Publisher)
# On the operator listener's application: the service application it reports on.
SERVICE = web.AppKey("service", web.Application)
#: the home page's ranked list of the latest sealed epoch, read once per epoch
RANKING = web.AppKey("ranking", Ranking)
#: the full tiles this process read last (immutable: served from memory on a hit)
FULL_TILES = web.AppKey("full_tiles", FullTiles)
#: ``serve --mirror DIR``: the task that keeps the static mirror current (bureau.mirror)
MIRROR = web.AppKey("mirror", MirrorTask)
