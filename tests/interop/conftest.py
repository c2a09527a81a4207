"""A bureau with a public URL and an Ethereum address, one-hour epochs moved through
with the test clock, and an agent that linked an identity of each kind."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.interop.support import BUREAU_ETH, PUBLIC_URL, Linked, linked_world
from tests.support import BureauUnderTest, start_bureau
from tests.views.support import EPOCH_SECONDS


@pytest.fixture
async def bureau(database_url: str, tmp_path: Path) -> AsyncIterator[BureauUnderTest]:
    async with start_bureau(database_url, tmp_path, epoch_seconds=EPOCH_SECONDS,
                            public_url=PUBLIC_URL, eth_address=BUREAU_ETH) as b:
        yield b


@pytest.fixture
async def linked(bureau: BureauUnderTest) -> Linked:
    return await linked_world(bureau)
