"""The bureau for epoch tests: one-hour epochs, moved through with the test clock."""

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


@pytest.fixture
async def v1_bureau(database_url: str, tmp_path: Path) -> AsyncIterator[BureauUnderTest]:
    """The same, on a ledger created under scoring policy v1 (tests of v1's numbers)."""
    async with start_bureau(database_url, tmp_path, epoch_seconds=EPOCH_SECONDS,
                            policy="v1") as b:
        yield b


@pytest.fixture
async def v2_bureau(database_url: str, tmp_path: Path) -> AsyncIterator[BureauUnderTest]:
    """The same, on a ledger created under scoring policy v2 (tests of v2's numbers; v4
    is the default for new ledgers)."""
    async with start_bureau(database_url, tmp_path, epoch_seconds=EPOCH_SECONDS,
                            policy="v2") as b:
        yield b


@pytest.fixture
async def v3_bureau(database_url: str, tmp_path: Path) -> AsyncIterator[BureauUnderTest]:
    """The same, on a ledger created under scoring policy v3 (tests of v3's numbers)."""
    async with start_bureau(database_url, tmp_path, epoch_seconds=EPOCH_SECONDS,
                            policy="v3") as b:
        yield b
