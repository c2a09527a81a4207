"""Shared fixtures: a real PostgreSQL (embedded via pgserver unless BUREAU_DATABASE_URL
names one), a fresh database per test, and the bureau served over real loopback HTTP."""

from __future__ import annotations

import os
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.support import BureauUnderTest, fresh_database, start_bureau

# LiteLLM (imported by the tests that read every module, and by tests/integrations) reads
# its model cost map from its package, not from the network.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


@pytest.fixture(scope="session")
def pg_server_url() -> Iterator[str]:
    """The URL of a PostgreSQL server the tests may create databases on."""
    given = os.environ.get("BUREAU_DATABASE_URL")
    if given:
        yield given
        return
    import pgserver

    with tempfile.TemporaryDirectory(prefix="bureau-test-pg-") as tmp:
        server = pgserver.get_server(Path(tmp) / "pgdata", cleanup_mode="stop")
        yield server.get_uri()
        server.cleanup()


@pytest.fixture
async def database_url(pg_server_url: str) -> AsyncIterator[str]:
    """A new, empty database for this test; dropped afterwards."""
    async with fresh_database(pg_server_url) as url:
        yield url


@pytest.fixture
async def bureau(database_url: str, tmp_path: Path) -> AsyncIterator[BureauUnderTest]:
    """The bureau, in this process, on a real loopback port, on a fresh database."""
    async with start_bureau(database_url, tmp_path) as b:
        yield b
