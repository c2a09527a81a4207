"""One bureau per test module for the reads tests.

Every test reads the files of keys it created itself, so tests sharing a database
cannot see each other's entries.
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
    name = "bureau_reads_" + secrets.token_hex(6)
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
