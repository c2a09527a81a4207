"""Report worker processes (bureau.views.shards) write exactly what one process writes,
on a real database, and a worker that dies fails its epoch instead of a wrong report."""

from __future__ import annotations

import os
import signal

import asyncpg
import pytest

from bureau.http.keys import SEALER
from bureau.storage.reports import Seal, seals
from bureau.views.builder import ReportBuilder
from bureau.views.shards import ShardFailed
from tests.support import BureauUnderTest
from tests.views.test_rebuild import busy_ledger


async def _all_epochs(builder: ReportBuilder, conn: asyncpg.Connection,
                      upto: list[Seal]) -> list[tuple[list[str], list[bytes], bytes]]:
    return [await builder.sign_epoch(conn, seal) for seal in upto]


async def test_worker_processes_write_the_bytes_of_one_process(
        bureau: BureauUnderTest) -> None:
    await busy_ledger(bureau)
    conn = await asyncpg.connect(bureau.database_url)
    one = ReportBuilder(bureau.signing_key, bureau.log_key)
    try:
        sealed = await seals(conn)
        assert len(sealed) == 3
        want = await _all_epochs(one, conn, sealed)
        assert all(agents for agents, _, _ in want)
        for workers in (2, 3):  # three shards of a few agents: some shard is empty
            many = ReportBuilder(bureau.signing_key, bureau.log_key, workers=workers,
                                 dsn=bureau.database_url)
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
    one = ReportBuilder(bureau.signing_key, bureau.log_key)
    many = ReportBuilder(bureau.signing_key, bureau.log_key, workers=2, dsn=bureau.database_url)
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


@pytest.mark.parametrize("workers", [2, 1], ids=["workers", "in process"])
async def test_workers_store_the_reports_and_the_checkpoint_makes_them_visible(
        bureau: BureauUnderTest, workers: int) -> None:
    """With workers, each inserts its own reports and the leader writes the checkpoint
    last. A build that died between the two (some reports in, no checkpoint) is
    finished by the next one, with the same bytes — by workers again, or in one process
    (``--report-workers 1``, or another node leading), whose COPY met the reports left
    there and failed the epoch at every pass, leaving it without a checkpoint."""
    await busy_ledger(bureau)
    await bureau.app[SEALER].stop()  # the app's own builder stays out of this
    conn = await asyncpg.connect(bureau.database_url)
    many = ReportBuilder(bureau.signing_key, bureau.log_key, workers=workers,
                         dsn=bureau.database_url)
    try:
        stored = "SELECT agent, epoch, envelope FROM reports ORDER BY epoch, agent"
        want_reports = await conn.fetch(stored)  # built by the app, in its process
        want_checkpoints = await conn.fetch("SELECT * FROM checkpoints ORDER BY epoch")
        assert len(want_checkpoints) == 3 and want_reports
        await conn.execute("DELETE FROM checkpoints")
        last = want_checkpoints[-1]["epoch"]
        await conn.execute("DELETE FROM reports WHERE epoch <> $1 OR agent > (SELECT"
                           " min(agent) FROM reports WHERE epoch = $1)", last)
        assert await conn.fetchval("SELECT count(*) FROM reports") == 1  # a half build
        assert await many.build_pending(conn) == [c["epoch"] for c in want_checkpoints]
        assert await conn.fetch(stored) == want_reports
        assert await conn.fetch("SELECT * FROM checkpoints ORDER BY epoch") == \
            want_checkpoints
    finally:
        many.close()
        await conn.close()


async def test_worker_processes_store_the_cards_one_process_stores(
        bureau: BureauUnderTest) -> None:
    """Each worker signs and stores its shard's card statements with its reports: the
    very rows one process writes."""
    await busy_ledger(bureau)  # built by the bureau's own builder, in one process
    conn = await asyncpg.connect(bureau.database_url)
    many = ReportBuilder(bureau.signing_key, bureau.log_key, workers=2,
                         dsn=bureau.database_url)
    try:
        one_process = {(r["epoch"], r["agent"]): bytes(r["envelope"])
                       for r in await conn.fetch("SELECT * FROM cards")}
        reports = await conn.fetchval("SELECT count(*) FROM reports")
        assert len(one_process) == reports > 0
        await conn.execute("DELETE FROM checkpoints")
        await conn.execute("DELETE FROM cards")
        await conn.execute("DELETE FROM reports")
        await conn.execute("DELETE FROM settlement_rows")
        await conn.execute("DELETE FROM settlements")
        for seal in await seals(conn):
            await many.build(conn, seal)
        workers = {(r["epoch"], r["agent"]): bytes(r["envelope"])
                   for r in await conn.fetch("SELECT * FROM cards")}
        assert workers == one_process
    finally:
        many.close()
        await conn.close()
