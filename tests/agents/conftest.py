"""One bureau per test module for the agents tests.

Creating and dropping a database costs most of a second; these tests make dozens of
short scenarios, so each module shares one bureau on one fresh database. Every test
uses keys (and so agents, reporters, interactions) of its own, and every assertion on
stored rows filters by those keys or by entry ids, so tests cannot see each other.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.support import BureauUnderTest, fresh_database, start_bureau


@pytest.fixture(scope="module")
async def bureau(pg_server_url: str,
                 tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[BureauUnderTest]:
    async with fresh_database(pg_server_url, "bureau_agents_") as url, \
            start_bureau(url, tmp_path_factory.mktemp("bureau-home")) as b:
        yield b
