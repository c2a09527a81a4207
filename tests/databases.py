"""The tests' PostgreSQL: one server per test process, a migrated template on it, and a
fresh database per test (or per module) copied from that template.

Three costs made most of the suite's time before (measured on this 2-core machine with
the embedded server): dropping a database, ~1 s with ``fsync`` on (PostgreSQL flushes
everything the copy wrote); migrating an empty one, 0.3-0.5 s; and starting the bureau
on it. Here the first two are gone:

* **No fsync on the embedded test server.** ``fsync`` only decides what survives a crash
  of the *operating system*; every crash a test makes (kill -9 of a bureau process, of a
  sequencer, of a private PostgreSQL in tests/hardening/pg.py) leaves the OS and its page
  cache running, so every committed row survives exactly as it would with ``fsync`` on.
  ``synchronous_commit`` stays on: a commit is still acknowledged only once written.
  A server named by ``BUREAU_DATABASE_URL`` is never reconfigured.
* **Migrate once.** The first fresh database of a process is migrated and kept as the
  template; every later one is ``CREATE DATABASE ... TEMPLATE`` of it (a file copy of a
  few MB). The template itself is migrated through ``bureau.storage.db.migrate``, so the
  migrations are still applied to an empty database in every run.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from urllib.parse import urlsplit, urlunsplit

import asyncpg

from bureau.storage import db

#: server URL -> the name of its migrated template database (one per test process)
_TEMPLATES: dict[str, str] = {}

#: Settings of the embedded test server (see the module's docstring for why they are safe).
TEST_SERVER_SETTINGS = {"fsync": "off", "full_page_writes": "off"}


def worker_tag() -> str:
    """This test process's name under pytest-xdist (``gw0``, ``gw1``, …), ``main`` alone:
    what keeps two workers' databases on one server apart."""
    return os.environ.get("PYTEST_XDIST_WORKER", "main")


def database_at(server_url: str, name: str) -> str:
    return urlunsplit(urlsplit(server_url)._replace(path="/" + name))


async def tune_for_tests(server_url: str) -> None:
    """Apply ``TEST_SERVER_SETTINGS`` to a server this test run started itself."""
    conn = await asyncpg.connect(server_url)
    try:
        for name, value in TEST_SERVER_SETTINGS.items():
            await conn.execute(f"ALTER SYSTEM SET {name} = '{value}'")
        await conn.execute("SELECT pg_reload_conf()")
    finally:
        await conn.close()


async def _template_of(server_url: str, admin: asyncpg.Connection) -> str:
    """The migrated template database on ``server_url``, made on first use."""
    name = _TEMPLATES.get(server_url)
    if name is None:
        name = f"bureau_template_{worker_tag()}_{secrets.token_hex(4)}"
        await admin.execute(f'CREATE DATABASE "{name}"')
        conn = await asyncpg.connect(database_at(server_url, name))
        try:
            await db.migrate(conn)
        finally:
            await conn.close()
        _TEMPLATES[server_url] = name
    return name


async def drop_templates() -> None:
    """Drop every template this process made (at the end of the session)."""
    for server_url, name in list(_TEMPLATES.items()):
        conn = await asyncpg.connect(server_url)
        try:
            await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await conn.close()
        del _TEMPLATES[server_url]


@asynccontextmanager
async def fresh_database(pg_server_url: str, prefix: str = "bureau_test_", *,
                         migrated: bool = True) -> AsyncIterator[str]:
    """A new database on the test server, dropped afterwards; yields its URL. It is
    already migrated (a copy of the template) unless ``migrated=False`` asks for an
    empty one."""
    name = f"{prefix}{worker_tag()}_{secrets.token_hex(5)}"
    admin = await asyncpg.connect(pg_server_url)
    try:
        if migrated:
            template = await _template_of(pg_server_url, admin)
            await admin.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
        else:
            await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    try:
        yield database_at(pg_server_url, name)
    finally:
        admin = await asyncpg.connect(pg_server_url)
        try:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await admin.close()
