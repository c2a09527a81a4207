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
from typing import Any, TypeVar

import asyncpg

from bureau import metrics

log = logging.getLogger(__name__)

def migrations_dir(package_root: Path, prefix: Path) -> Path:
    """Where the SQL migrations are: ``migrations/`` beside the package in a checkout
    (or an editable install), else where a wheel installed them (pyproject's
    data-files: ``<prefix>/share/bureau/migrations``)."""
    beside = package_root / "migrations"
    return beside if beside.is_dir() else prefix / "share" / "bureau" / "migrations"


MIGRATIONS_DIR = migrations_dir(Path(__file__).resolve().parent.parent, Path(sys.prefix))
# Any constant works; it only has to be the same in every bureau process.
_MIGRATION_LOCK = 0x6275726561750001

T = TypeVar("T")

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
                      connect_timeout: float = 60) -> asyncpg.Pool:
    pool = await asyncpg.create_pool(
        url, min_size=min_size, max_size=max_size, command_timeout=60,
        timeout=connect_timeout,
        server_settings={"application_name": "bureau"},
    )
    assert pool is not None
    return pool

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
    except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError):
        return False
    return True

def is_connection_error(exc: BaseException) -> bool:
    """True for failures that mean 'the database is not there right now'.

    asyncpg's client-side ``DataError`` ("invalid input for query argument": a value it
    cannot encode) is an ``InterfaceError`` and a ``ValueError``: it says something about
    the data, not the connection, so it is not one of these."""
    if isinstance(exc, asyncpg.InterfaceError) and isinstance(exc, ValueError):
        return False
    return isinstance(
        exc,
        OSError | TimeoutError | asyncpg.InterfaceError | asyncpg.PostgresConnectionError
        | asyncpg.CannotConnectNowError | asyncpg.AdminShutdownError,
    )

Record = dict[str, Any]


async def connect(url: str) -> asyncpg.Connection:
    """One connection, for command-line tools."""
    conn: asyncpg.Connection = await asyncpg.connect(url)
    return conn
