"""A real primary and a real streaming replica on loopback TCP, shared by the scaling
tests (tests/scaling/replication.py); skipped, saying why, where the embedded
PostgreSQL's binaries cannot make them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.scaling.replication import Pair, Unavailable, replicated_pair


@pytest.fixture(scope="session")
def pair() -> Iterator[Pair]:
    try:
        with replicated_pair() as made:
            yield made
    except Unavailable as why:
        pytest.skip(f"no streaming replica from the embedded PostgreSQL's binaries: {why}")
