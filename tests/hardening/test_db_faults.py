"""The database goes away mid-stream (SPEC §5, §6 ``UNAVAILABLE``): on a private
PostgreSQL that this test stops and starts (tests/hardening/pg.py), while a
:class:`reporters.Reporter` streams facts through its durable spool.

While the database is down: intake answers ``503 UNAVAILABLE`` with ``Retry-After``,
``/readyz`` answers 503, nothing is half-written. When it is back: the service
reconnects by itself, and the spool delivers every fact exactly once.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest

import reporters
from reporters import wire
from tests.hardening.pg import PrivatePostgres
from tests.processes import bureau_env, run_cli
from tests.support import BureauUnderTest, fact_payload, start_bureau

pytestmark = pytest.mark.slow

FACTS = 400


@pytest.fixture
async def bureau_on_private_pg(private_pg: PrivatePostgres,
                               tmp_path: Path) -> AsyncIterator[BureauUnderTest]:
    async with start_bureau(private_pg.url, tmp_path) as b:
        yield b


async def _consistency(url: str) -> dict[str, int | bool]:
    conn = await asyncpg.connect(url)
    try:
        row = await conn.fetchrow(
            "SELECT count(*) AS n, coalesce(max(seq), 0) AS top,"
            " count(*) FILTER (WHERE kind = 'fact') AS facts,"
            " count(DISTINCT content_key) FILTER (WHERE kind = 'fact') AS distinct_facts"
            " FROM entries")
        head = await conn.fetchval("SELECT seq FROM ledger_head")
        indexed = await conn.fetchval("SELECT count(*) FROM facts")
    finally:
        await conn.close()
    assert row is not None
    return {"contiguous": row["n"] == row["top"] == head, "facts": row["facts"],
            "distinct_facts": row["distinct_facts"], "indexed_facts": indexed}


async def test_database_down_and_back_mid_stream(bureau_on_private_pg: BureauUnderTest,
                                                 private_pg: PrivatePostgres,
                                                 tmp_path: Path) -> None:
    b = bureau_on_private_pg
    key = await b.reporter(("facts",))
    subject = wire.signing_key_id(wire.generate_key())
    down_answers: list[tuple[int, str, str | None]] = []

    async with reporters.Reporter(key, b.url, tmp_path / "spool", backoff_base=0.05,
                                  max_backoff=0.5, batch_size=50) as reporter:
        for i in range(FACTS // 2):
            await reporter.send(reporter.fact(f"db-{i}", subject, latency_ms=i))
        await asyncio.sleep(0.05)  # some batches in flight when the database goes
        private_pg.stop("immediate")  # a crash: no shutdown checkpoint, recovery on start
        try:
            for i in range(FACTS // 2, FACTS):  # the gateway keeps reporting
                await reporter.send(reporter.fact(f"db-{i}", subject, latency_ms=i))
            # What a client sees while the database is away.
            probe = wire.sign_payload(key, "fact", fact_payload("db-probe", subject))
            async with b.session.post(b.url + "/v1/evidence", json=probe) as resp:
                down_answers.append((resp.status, (await resp.json())["code"],
                                     resp.headers.get("Retry-After")))
            line = json.dumps(probe).encode() + b"\n"
            async with b.session.post(b.url + "/v1/evidence/batch", data=line,
                                      headers={"Content-Type": "application/x-ndjson"}
                                      ) as resp:
                down_answers.append((resp.status, (await resp.json())["code"],
                                     resp.headers.get("Retry-After")))
            async with b.session.get(b.url + "/readyz") as resp:
                down_answers.append((resp.status, (await resp.json())["code"],
                                     resp.headers.get("Retry-After")))
            assert reporter.pending > 0, "the spool holds what could not be delivered"
            await asyncio.sleep(1.0)
        finally:
            private_pg.start()
        # Reconnects by itself: readiness comes back without a restart of the service.
        for _ in range(100):
            async with b.session.get(b.url + "/readyz") as resp:
                if resp.status == 200:
                    break
            await asyncio.sleep(0.1)
        else:
            pytest.fail("the service did not reconnect to the database")
        await asyncio.wait_for(reporter.flush(), 60)
        assert reporter.pending == 0
        assert reporter.rejections == []

    for status, code, retry_after in down_answers:
        assert (status, code) == (503, "UNAVAILABLE")
        assert retry_after is not None and retry_after.isdigit()

    state = await _consistency(private_pg.url)
    assert state == {"contiguous": True, "facts": FACTS, "distinct_facts": FACTS,
                     "indexed_facts": FACTS}, "every fact exactly once, nothing half-written"
    env = bureau_env(private_pg.url, tmp_path, wire.signing_key_id(b.admin))
    verified = run_cli(env, "verify")
    assert verified.returncode == 0, verified.stderr
    # The probe envelope sent while the database was away was never admitted.
    status, body = await b.post(probe)
    assert status == 201, body
