"""Report worker processes (bureau.derive_shards) write exactly what one process writes,
on a real database, and a worker that dies fails its epoch instead of a wrong report."""

from __future__ import annotations

import os
import signal

import asyncpg
import pytest

from bureau.derive_shards import ShardFailed
from bureau.reports import ReportBuilder, Seal, seals
from tests.reports.test_rebuild import busy_ledger
from tests.support import BureauUnderTest


async def _all_epochs(builder: ReportBuilder, conn: asyncpg.Connection,
                      upto: list[Seal]) -> list[tuple[list[str], list[bytes], bytes]]:
    return [await builder.sign_epoch(conn, seal) for seal in upto]


async def test_worker_processes_write_the_bytes_of_one_process(
        bureau: BureauUnderTest) -> None:
    await busy_ledger(bureau)
    conn = await asyncpg.connect(bureau.database_url)
    one = ReportBuilder(bureau.signing_key)
    try:
        sealed = await seals(conn)
        assert len(sealed) == 3
        want = await _all_epochs(one, conn, sealed)
        assert all(agents for agents, _, _ in want)
        for workers in (2, 3):  # three shards of a few agents: some shard is empty
            many = ReportBuilder(bureau.signing_key, workers=workers, dsn=bureau.database_url)
            try:
                assert await _all_epochs(many, conn, sealed) == want
                assert len(many.worker_pids()) == workers
                # an older epoch again: the workers start over from entry 1
                assert await many.sign_epoch(conn, sealed[0]) == want[0]
            finally:
                many.close()
            assert many.worker_pids() == []
    finally:
        one.close()
        await conn.close()


async def test_a_dead_worker_fails_the_epoch_and_a_reset_recovers(
        bureau: BureauUnderTest) -> None:
    await busy_ledger(bureau)
    conn = await asyncpg.connect(bureau.database_url)
    one = ReportBuilder(bureau.signing_key)
    many = ReportBuilder(bureau.signing_key, workers=2, dsn=bureau.database_url)
    try:
        sealed = await seals(conn)
        want = await _all_epochs(one, conn, sealed)
        assert await many.sign_epoch(conn, sealed[0]) == want[0]
        victim = many.worker_pids()[1]
        os.kill(victim, signal.SIGKILL)
        with pytest.raises(ShardFailed, match="died"):
            await many.sign_epoch(conn, sealed[1])
        many.reset()  # what the settler does after a failed build
        assert many.worker_pids() == []
        assert await _all_epochs(many, conn, sealed[1:]) == want[1:]
        assert victim not in many.worker_pids()
    finally:
        many.close()
        one.close()
        await conn.close()
