"""PostgreSQL: the embedded server, the connection pool, migrations and named
transactions.

With no ``BUREAU_DATABASE_URL`` the bureau runs its own PostgreSQL (the ``pgserver``
wheel) with its data under ``BUREAU_HOME/pgdata``, so a newcomer needs nothing else.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import time
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, TypeAlias, TypeVar

import asyncpg

from bureau import metrics

log = logging.getLogger(__name__)

def migrations_dir(package_root: Path, prefix: Path) -> Path:
    """Where the SQL migrations are: ``migrations/`` beside the package in a checkout
    (or an editable install), else where a wheel installed them (pyproject's
    data-files: ``<prefix>/share/bureau/migrations``)."""
    beside = package_root / "migrations"
    return beside if beside.is_dir() else prefix / "share" / "bureau" / "migrations"


MIGRATIONS_DIR = migrations_dir(Path(__file__).resolve().parents[2], Path(sys.prefix))
# Any constant works; it only has to be the same in every bureau process.
_MIGRATION_LOCK = 0x6275726561750001

T = TypeVar("T")

#: What the layers above hold and hand back to the stores, so that none of them imports
#: asyncpg (tests/structure/test_layers.py): a connection, a pool, a pool's connection,
#: a row.
Connection: TypeAlias = asyncpg.Connection
Pool: TypeAlias = asyncpg.Pool
PoolConnection: TypeAlias = asyncpg.pool.PoolConnectionProxy
Row: TypeAlias = asyncpg.Record
#: what a failed query raises: the network's error (a timeout too), the server's
#: refusal, or the client's (a connection lost, a protocol in error)
QUERY_ERRORS: tuple[type[Exception], ...] = (
    OSError, asyncpg.PostgresError, asyncpg.InterfaceError)

def embedded_database_url(home: Path) -> str:
    """Start (or join) the embedded PostgreSQL under ``home/pgdata`` and return its URL.

    The server keeps running for as long as a process that asked for it does, and its
    data stays on disk between runs.
    """
    with warnings.catch_warnings():  # platformdirs warns when XDG_RUNTIME_DIR is unset
        warnings.simplefilter("ignore")
        import pgserver  # imported lazily: only the embedded mode needs it

    pgdata = home / "pgdata"
    pgdata.mkdir(parents=True, exist_ok=True)
    server = pgserver.get_server(pgdata, cleanup_mode="stop")  # type: ignore[attr-defined]
    url: str = server.get_uri()
    return url

def has_embedded_database(home: Path) -> bool:
    """Does ``home`` hold an embedded PostgreSQL's data (made by an earlier start)?"""
    return (home / "pgdata" / "PG_VERSION").is_file()

async def create_pool(url: str, *, min_size: int = 2, max_size: int = 10,
                      connect_timeout: float = 60, link: str = "database pool",
                      ) -> asyncpg.Pool:
    """A pool on ``url`` (one host, or several with ``target_session_attrs``). asyncpg
    replaces a connection that died at its next use; every new one goes through the
    :class:`Link` named ``link``, which tells the log when the pool lost the database
    and where it reconnected."""
    tracked = Link(link)
    logging.getLogger("asyncpg.pool").addFilter(_SAID_BY_THE_LINK)

    async def connect(*args: Any, **kwargs: Any) -> asyncpg.Connection:
        return await tracked.connect(lambda: asyncpg.connect(*args, **kwargs))

    pool = await asyncpg.create_pool(
        url, min_size=min_size, max_size=max_size, command_timeout=60,
        timeout=connect_timeout, connect=connect,
        server_settings={"application_name": "bureau"},
    )
    assert pool is not None
    return pool


class _SaidByTheLink(logging.Filter):
    """asyncpg's pool logs each failed attempt to restore its connections, traceback
    and all, every few seconds for as long as the database is away; the pool's
    :class:`Link` has said that once, so those records are dropped (any other failure
    of the pool's is still logged)."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return exc is None or not is_connection_error(exc)


_SAID_BY_THE_LINK = _SaidByTheLink()


async def server_of(conn: asyncpg.Connection) -> str:
    """Which server ``conn`` reached: ``host:port``, or the local socket. With a
    multi-host URL this is the node that was read-write when the connection opened."""
    row = await conn.fetchrow("SELECT host(inet_server_addr()) AS host,"
                              " current_setting('port') AS port")
    if row is None or row["host"] is None:
        return f"the local socket (port {row['port'] if row else '?'})"
    host: str = row["host"]
    return f"[{host}]:{row['port']}" if ":" in host else f"{host}:{row['port']}"


class Link:
    """One way this process keeps reaching the database — its pool, the committer's
    own connection, a report worker's — which says in the log, once each, when it lost
    the database and when it has it back (and on which server: after a failover, the
    new primary), and counts each return in ``bureau_db_reconnects_total{link}``.

    The database is lost when opening a connection fails for want of one
    (:func:`is_connection_error`: no host answers, or none of the URL's hosts is the
    read-write node yet), or when its owner reports a connection that died in use
    (:meth:`lost`). Nothing here retries: each owner opens again when it next needs a
    connection, so reconnecting costs nothing while the database is away."""

    def __init__(self, name: str) -> None:
        self.name = name
        #: where the last connection opened went (None before the first)
        self.server: str | None = None
        self._lost_at: float | None = None

    def lost(self, exc: BaseException) -> None:
        if self._lost_at is None:
            self._lost_at = time.monotonic()
            log.warning("%s: lost the database (%s); it reconnects by itself", self.name,
                        str(exc) or type(exc).__name__)

    async def connect(self, open_one: Callable[[], Awaitable[asyncpg.Connection]],
                      ) -> asyncpg.Connection:
        """``open_one()``'s connection, noted; a failure for want of a database is
        noted and raised."""
        try:
            conn = await open_one()
        except Exception as exc:
            if is_connection_error(exc):
                self.lost(exc)
            raise
        try:
            server = await server_of(conn)
        except BaseException as exc:
            conn.terminate()
            if is_connection_error(exc):
                self.lost(exc)
            raise
        if self._lost_at is not None:
            metrics.DB_RECONNECTS.labels(link=self.name).inc()
            log.warning("%s: reconnected, to the database at %s, %.1f s after losing it",
                        self.name, server, time.monotonic() - self._lost_at)
        elif self.server is None:
            log.info("%s: connected to the database at %s", self.name, server)
        elif server != self.server:
            metrics.DB_RECONNECTS.labels(link=self.name).inc()
            log.warning("%s: reconnected, to the database at %s (it was at %s)",
                        self.name, server, self.server)
        self._lost_at, self.server = None, server
        return conn

def migration_files() -> list[Path]:
    files = sorted(MIGRATIONS_DIR.glob("[0-9][0-9][0-9][0-9]_*.sql"))
    if not files:
        raise RuntimeError(f"no migrations found in {MIGRATIONS_DIR}")
    return files

async def migrate(conn: asyncpg.Connection) -> list[str]:
    """Apply every migration not yet applied, in order, each in its own transaction.

    An advisory lock makes this safe when several processes start at once: one applies,
    the others wait and then find nothing left to do. Returns the names applied.
    """
    applied: list[str] = []
    await conn.execute("SELECT pg_advisory_lock($1)", _MIGRATION_LOCK)
    try:
        # Checked first: CREATE ... IF NOT EXISTS needs CREATE on the schema even when the
        # table exists, and the least-privilege role (migrations/0004_roles.sql) has none.
        if await conn.fetchval("SELECT to_regclass('schema_migrations')") is None:
            await conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations ("
                " name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
            )
        done = {r["name"] for r in await conn.fetch("SELECT name FROM schema_migrations")}
        for path in migration_files():
            if path.name in done:
                continue
            async with transaction(conn, "migrate"):
                await conn.execute(path.read_text())
                await conn.execute("INSERT INTO schema_migrations (name) VALUES ($1)", path.name)
            applied.append(path.name)
            log.info("applied migration %s", path.name)
    finally:
        await conn.execute("SELECT pg_advisory_unlock($1)", _MIGRATION_LOCK)
    return applied

class TxTimer:
    """Times one named transaction into ``bureau_db_transaction_seconds``; set
    ``outcome = "commit"`` once it committed."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.outcome = "error"
        self._start = time.perf_counter()

    def __enter__(self) -> TxTimer:
        return self

    def __exit__(self, *exc: object) -> None:
        metrics.DB_TRANSACTION_SECONDS.labels(name=self.name, outcome=self.outcome).observe(
            time.perf_counter() - self._start)


async def run_tx(
    pool: asyncpg.Pool, name: str, fn: Callable[[asyncpg.Connection], Awaitable[T]],
    *, isolation: str = "read_committed",
) -> T:
    """Run ``fn`` in one named transaction on a connection of ``pool``, timed (the wait
    for the connection included) in ``bureau_db_transaction_seconds``."""
    with TxTimer(name) as timer:
        async with pool.acquire() as conn, conn.transaction(isolation=isolation):
            result = await fn(conn)
        timer.outcome = "commit"
        return result


@contextlib.asynccontextmanager
async def transaction(conn: asyncpg.Connection, name: str, *,
                      isolation: str = "read_committed",
                      readonly: bool = False) -> AsyncIterator[asyncpg.Connection]:
    """One named transaction on ``conn``, timed in ``bureau_db_transaction_seconds``:
    ``async with db.transaction(conn, "store_epoch"): ...``. Every explicit transaction
    of the service is opened here, by :func:`run_tx`, or (the group commit, which
    takes its lock in the same round trip as BEGIN) under a :class:`TxTimer`."""
    with TxTimer(name) as timer:
        async with conn.transaction(isolation=isolation, readonly=readonly):
            yield conn
        timer.outcome = "commit"

async def is_reachable(pool: asyncpg.Pool) -> bool:
    try:
        async with pool.acquire(timeout=2) as conn:
            await conn.fetchval("SELECT 1", timeout=2)
    except QUERY_ERRORS:
        return False
    return True

def is_connection_error(exc: BaseException) -> bool:
    """True for failures that mean 'the database is not there right now'.

    With a multi-host URL (``target_session_attrs=read-write``) that includes finding
    no read-write node among the hosts, and a write refused because the node stopped
    being the read-write one (SQLSTATE 25006; pg_auto_failover makes a standby it is
    promoting refuse writes until the old primary is out): during a failover, both
    mean "retry later", like a connection refused.

    asyncpg's client-side ``DataError`` ("invalid input for query argument": a value it
    cannot encode) is an ``InterfaceError`` and a ``ValueError``: it says something about
    the data, not the connection, so it is not one of these. Its ``InternalClientError``
    ("cannot switch to state 15; another operation (2) is in progress", seen once when a
    primary died under a group commit) is a connection left in a state it cannot be used
    in: nothing was written, the connection is dropped, and the caller retries later."""
    if isinstance(exc, asyncpg.InterfaceError) and isinstance(exc, ValueError):
        return False
    return isinstance(
        exc,
        OSError | TimeoutError | asyncpg.InterfaceError | asyncpg.InternalClientError
        | asyncpg.PostgresConnectionError
        | asyncpg.CannotConnectNowError | asyncpg.AdminShutdownError
        | asyncpg.TargetServerAttributeNotMatched | asyncpg.ReadOnlySQLTransactionError,
    )

Record = dict[str, Any]


async def connect(url: str, *, application_name: str | None = None,
                  command_timeout: float | None = None) -> asyncpg.Connection:
    """One connection of its own: for command-line tools, and for a process's long-lived
    connection (the committer's), named in ``pg_stat_activity`` by ``application_name``."""
    settings = None if application_name is None else {"application_name": application_name}
    conn: asyncpg.Connection = await asyncpg.connect(
        url, command_timeout=command_timeout, server_settings=settings)
    return conn
