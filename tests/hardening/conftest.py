"""Every in-process hardening test also checks that nothing was answered with a 5xx other
than ``503 UNAVAILABLE`` while it ran (SPEC §5: nothing is a 500 unless the server is
broken). ``private_pg``: a PostgreSQL of the test's own, which it may stop, crash or
make read-only (tests/hardening/pg.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.hardening.pg import PrivatePostgres
from tests.hardening.support import server_errors


@pytest.fixture(autouse=True)
def no_server_errors() -> Iterator[None]:
    before = server_errors()
    yield
    assert server_errors() == before, "a request was answered with a 5xx other than 503"


@pytest.fixture
def private_pg() -> Iterator[PrivatePostgres]:
    pg = PrivatePostgres()
    pg.init()
    pg.start()
    try:
        yield pg
    finally:
        pg.destroy()
