"""One bureau per test module for the reads tests.

Every test reads the files of keys it created itself, so tests sharing a database
cannot see each other's entries.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.support import BureauUnderTest, fresh_database, start_bureau


@pytest.fixture(scope="module")
async def bureau(pg_server_url: str,
                 tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[BureauUnderTest]:
    async with fresh_database(pg_server_url, "bureau_reads_") as url, \
            start_bureau(url, tmp_path_factory.mktemp("bureau-home")) as b:
        yield b
