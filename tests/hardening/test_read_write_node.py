"""The bureau writes only to the read-write node its URL leads to (docs/scaling.md "High
availability"): a multi-host URL with ``target_session_attrs=read-write``, on a private
PostgreSQL this test can turn read-only (tests/hardening/pg.py).

A failover has moments when no host of the URL takes writes: the dead primary refuses
connections, and pg_auto_failover keeps the standby it is promoting read-only
(``default_transaction_read_only``) until the old primary is out. For the bureau that is
the database being away, like a connection refused: intake answers ``503 UNAVAILABLE``
with ``Retry-After`` (``database_unreachable``), never refuses an envelope as one it
cannot store (``500``, the group split in halves), and once a node takes writes again
the committer reconnects by itself and says so in the log.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import asyncpg
import pytest

from bureau.storage import db
from reporters import wire
from tests.hardening.pg import PrivatePostgres
from tests.processes import bureau_env, free_port, run_cli
from tests.support import fact_payload, kid, start_bureau
from tests.support import registry_sample as sample

pytestmark = pytest.mark.slow


async def set_read_only(url: str, on: bool) -> None:
    """What pg_auto_failover's keeper does to a standby it promotes, and undoes once the
    old primary is out; returns once new sessions see it (the server has reloaded, and
    signalled every session to)."""
    conn = await asyncpg.connect(url)
    try:
        if on:
            await conn.execute("ALTER SYSTEM SET default_transaction_read_only = on")
        else:
            await conn.execute("ALTER SYSTEM RESET default_transaction_read_only")
        await conn.execute("SELECT pg_reload_conf()")
    finally:
        await conn.close()
    while True:
        conn = await asyncpg.connect(url)
        try:
            if await conn.fetchval("SHOW default_transaction_read_only") == ("on" if on
                                                                            else "off"):
                return
        finally:
            await conn.close()
        await asyncio.sleep(0.01)


async def test_no_read_write_node_is_the_database_away(private_pg: PrivatePostgres,
                                                       tmp_path: Path,
                                                       caplog: pytest.LogCaptureFixture,
                                                       ) -> None:
    caplog.set_level(logging.INFO)
    live = f"127.0.0.1:{private_pg.port}"
    # the first host is down, as a dead primary is: the bureau goes on to the next
    url = (f"postgresql://postgres@127.0.0.1:{free_port()},{live}/postgres"
           "?target_session_attrs=read-write")
    async with start_bureau(url, tmp_path) as b:
        reporter = await b.reporter(("facts",))
        subject = kid(wire.generate_key())
        status, body = await b.post(wire.sign_payload(reporter, "fact",
                                                      fact_payload("before", subject)))
        assert status == 201, body
        isolated = sample("bureau_commit_isolated_total")
        splits = sample("bureau_commit_group_splits_total")
        unreachable = sample("bureau_unavailable_total", reason="database_unreachable")

        await set_read_only(private_pg.url, True)
        during = wire.sign_payload(reporter, "fact", fact_payload("during", subject))
        # The first on the committer's session (the write refused: SQLSTATE 25006), the
        # second on the new connection it tries (no host will do).
        for _ in range(2):
            async with b.session.post(b.url + "/v1/evidence", json=during) as resp:
                answer = await resp.json()
                assert (resp.status, answer["code"]) == (503, "UNAVAILABLE"), answer
                assert resp.headers["Retry-After"].isdigit()
        assert sample("bureau_commit_isolated_total") == isolated
        assert sample("bureau_commit_group_splits_total") == splits
        assert sample("bureau_unavailable_total",
                      reason="database_unreachable") == unreachable + 2
        # With the one live host alone in the URL, asyncpg finds no host that will do;
        # that is a connection error too.
        with pytest.raises(asyncpg.TargetServerAttributeNotMatched) as raised:
            await asyncpg.connect(f"postgresql://postgres@{live}/postgres"
                                  "?target_session_attrs=read-write")
        assert db.is_connection_error(raised.value)

        await set_read_only(private_pg.url, False)
        status, body = await b.post(during)
        assert status == 201, body
        assert body["status"] == "accepted"

    said = caplog.text
    assert "committer: lost the database" in said
    assert f"committer: reconnected, to the database at {live}" in said
    assert "refused alone" not in said
    env = bureau_env(url, tmp_path, kid(b.admin))
    verified = run_cli(env, "verify")
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_a_connection_in_a_state_it_cannot_be_used_in_is_unreachable() -> None:
    """asyncpg raised this once as a primary died under a group commit (the failover
    test): the committer isolated the lone submission and answered it 500. It is a
    connection that cannot be used, so 503 and retry, as a refused connection is; a
    value asyncpg cannot encode stays the data's fault."""
    stuck = asyncpg.InternalClientError(
        "cannot switch to state 15; another operation (2) is in progress")
    assert db.is_connection_error(stuck)
    assert not db.is_connection_error(asyncpg.DataError("invalid input for query argument"))
