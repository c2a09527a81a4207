"""The bureau for tiles and mirror tests: one-hour epochs moved through with the test
clock (tests/views/support.py), so a test seals when it wants."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.support import BureauUnderTest, start_bureau
from tests.views.support import EPOCH_SECONDS


@pytest.fixture
async def bureau(database_url: str, tmp_path: Path) -> AsyncIterator[BureauUnderTest]:
    async with start_bureau(database_url, tmp_path, epoch_seconds=EPOCH_SECONDS) as b:
        yield b
