"""One bureau per test module for the agents tests.

Creating and dropping a database costs most of a second; these tests make dozens of
short scenarios, so each module shares one bureau on one fresh database. Every test
uses keys (and so agents, reporters, interactions) of its own, and every assertion on
stored rows filters by those keys or by entry ids, so tests cannot see each other.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import pytest

from tests.support import BureauUnderTest, start_bureau


@pytest.fixture(scope="module")
async def bureau(pg_server_url: str,
                 tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[BureauUnderTest]:
    name = "bureau_agents_" + secrets.token_hex(6)
    admin = await asyncpg.connect(pg_server_url)
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    url = urlunsplit(urlsplit(pg_server_url)._replace(path="/" + name))
    try:
        async with start_bureau(url, tmp_path_factory.mktemp("bureau-home")) as b:
            yield b
    finally:
        admin = await asyncpg.connect(pg_server_url)
        try:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await admin.close()
