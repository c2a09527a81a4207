"""Reads off the primary (``BUREAU_READ_DATABASE_URL``, bureau.replica,
docs/scaling.md "Read replicas"), against a real primary and a real streaming replica
on loopback: a party reads its own writes at once, even while the replica's replay is
paused; what others wrote may be as old as the replica; a negative answer is confirmed
on the primary; a replica that is not there, or holds another ledger, is handled."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest

from bureau.http.keys import PUBLISHER, SEALER
from bureau.intake.genesis import StartRefused
from reporters import wire
from tests.processes import free_port
from tests.reads.support import get_raw, get_signed
from tests.scaling.replication import Pair, wait_replayed
from tests.support import (
    BureauUnderTest,
    fact_payload,
    fresh_database,
    kid,
    registry_sample,
    start_bureau,
)


@pytest.fixture
async def urls(pair: Pair) -> AsyncIterator[tuple[str, str]]:
    """A fresh database on the primary, and its URL on the replica once replayed."""
    name = "bureau_replica_" + secrets.token_hex(6)
    conn = await asyncpg.connect(pair.primary.url())
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    primary, replica = pair.primary.url(name), pair.replica.url(name)
    await wait_replayed(primary, replica)
    try:
        yield primary, replica
    finally:
        conn = await asyncpg.connect(pair.primary.url())
        try:
            await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await conn.close()


@pytest.fixture
async def bureau(urls: tuple[str, str], tmp_path: Path) -> AsyncIterator[BureauUnderTest]:
    primary, replica = urls
    async with start_bureau(primary, tmp_path, read_database_url=replica) as b:
        yield b


def reads(database: str, reason: str) -> float:
    return registry_sample("bureau_reads_total", database=database, reason=reason)


class Counted:
    """How many reads each (database, reason) served since it was made."""

    def __init__(self) -> None:
        self.base = {k: reads(*k) for k in self._keys()}

    @staticmethod
    def _keys() -> list[tuple[str, str]]:
        return [("replica", "current"), ("primary", "replica_behind"),
                ("primary", "not_found_on_replica"), ("primary", "replica_unavailable"),
                ("primary", "no_replica")]

    def since(self) -> dict[tuple[str, str], float]:
        return {k: reads(*k) - v for k, v in self.base.items() if reads(*k) - v}


async def _paused(replica_url: str, pause: bool) -> None:
    conn = await asyncpg.connect(replica_url)
    try:
        await conn.execute("SELECT pg_wal_replay_pause()" if pause
                           else "SELECT pg_wal_replay_resume()")
        if pause:  # a pause request takes effect at the next record replayed
            while await conn.fetchval("SELECT pg_get_wal_replay_pause_state()") == \
                    "pause requested":
                await conn.execute("SELECT pg_sleep(0.01)")
    finally:
        await conn.close()


async def _on_replica(replica_url: str, seq: int) -> bool:
    conn = await asyncpg.connect(replica_url)
    try:
        return bool(await conn.fetchval("SELECT EXISTS (SELECT 1 FROM entries WHERE seq = $1)",
                                        seq))
    finally:
        await conn.close()


async def test_a_party_reads_its_own_writes_while_replay_is_paused(
        bureau: BureauUnderTest, urls: tuple[str, str]) -> None:
    primary_url, replica_url = urls
    rep = await bureau.reporter()
    agent = wire.generate_key()
    first = await bureau.accepted(rep, "fact", fact_payload("i-1", kid(agent)))
    await wait_replayed(primary_url, replica_url)

    # Caught up: the replica serves the reporter's file, and has its fact.
    counted = Counted()
    status, page = await get_signed(bureau, rep, f"/v1/reporters/{kid(rep)}/entries")
    assert status == 200 and [e["seq"] for e in page["entries"]][-1] == first["seq"]
    assert counted.since() == {("replica", "current"): 1}

    await _paused(replica_url, True)
    try:
        # A submission and a refusal the paused replica cannot have.
        second = await bureau.accepted(rep, "fact", fact_payload("i-2", kid(agent)))
        status, refused = await bureau.submit(
            rep, "fact", fact_payload("i-2", kid(agent), latency_ms=999))
        assert status == 422 and refused["code"] == "CONFLICTING_FACT", refused
        assert not await _on_replica(replica_url, second["seq"])

        # The reporter reads both at once: the primary serves what the replica lacks.
        counted = Counted()
        status, page = await get_signed(bureau, rep, f"/v1/reporters/{kid(rep)}/entries")
        assert status == 200
        assert [e["seq"] for e in page["entries"]] == [first["seq"], second["seq"]]
        assert [r["code"] for r in page["refusals"]] == ["CONFLICTING_FACT"]
        assert counted.since() == {("primary", "replica_behind"): 1}

        # The agent wrote nothing: its file comes from the replica, as of its replay
        # (documented: others' writes about a party appear when the replica has them).
        counted = Counted()
        status, page = await get_signed(bureau, agent, f"/v1/agents/{kid(agent)}/entries")
        assert status == 200 and [e["seq"] for e in page["entries"]] == [first["seq"]]
        assert counted.since() == {("replica", "current"): 1}

        # A negative answer from the replica is confirmed on the primary: the new
        # entry's inclusion proof in a head the primary published after the pause.
        head = await bureau.app[PUBLISHER].publish_now()
        assert head is not None and head.size >= second["seq"]
        counted = Counted()
        status, proof = await get_raw(
            bureau, f"/v1/proofs/inclusion?id={second['id']}&size={head.size}")
        assert status == 200 and proof["leaf_index"] == second["seq"] - 1, proof
        assert counted.since() == {("primary", "not_found_on_replica"): 1}
        # ... while the latest tree head is the replica's, older (documented).
        status, note = await get_raw(bureau, "/checkpoint")
        assert status == 200 and f"\n{head.size}\n" not in note
    finally:
        await _paused(replica_url, False)

    await wait_replayed(primary_url, replica_url)
    counted = Counted()
    status, page = await get_signed(bureau, agent, f"/v1/agents/{kid(agent)}/entries")
    assert [e["seq"] for e in page["entries"]] == [first["seq"], second["seq"]]
    status, page = await get_signed(bureau, rep, f"/v1/reporters/{kid(rep)}/entries")
    assert [e["seq"] for e in page["entries"]] == [first["seq"], second["seq"]]
    assert counted.since() == {("replica", "current"): 2}


async def test_with_no_wait_a_lagging_replica_is_passed_over_at_once(
        urls: tuple[str, str], tmp_path: Path) -> None:
    primary_url, replica_url = urls
    async with start_bureau(primary_url, tmp_path, read_database_url=replica_url,
                            read_wait=0.0) as bureau:
        rep = await bureau.reporter()
        await _paused(replica_url, True)
        try:
            fact = await bureau.accepted(rep, "fact", fact_payload("i-1", kid(wire.generate_key())))
            counted = Counted()
            status, page = await get_signed(bureau, rep, f"/v1/reporters/{kid(rep)}/entries")
            assert status == 200 and page["entries"][-1]["seq"] == fact["seq"]
            assert counted.since() == {("primary", "replica_behind"): 1}
        finally:
            await _paused(replica_url, False)


async def test_a_replica_that_is_not_there_sends_reads_to_the_primary(
        database_url: str, tmp_path: Path) -> None:
    nowhere = f"postgresql://postgres@127.0.0.1:{free_port()}/postgres"
    async with start_bureau(database_url, tmp_path, read_database_url=nowhere) as bureau:
        rep = await bureau.reporter()
        fact = await bureau.accepted(rep, "fact", fact_payload("i-1", kid(wire.generate_key())))
        counted = Counted()
        status, page = await get_signed(bureau, rep, f"/v1/reporters/{kid(rep)}/entries")
        assert status == 200 and page["entries"][-1]["seq"] == fact["seq"]
        status, _ = await get_raw(bureau, "/checkpoint")
        assert status == 200
        assert counted.since() == {("primary", "replica_unavailable"): 2}


async def test_a_read_database_with_another_ledger_is_refused(
        pg_server_url: str, database_url: str, tmp_path: Path) -> None:
    async with fresh_database(pg_server_url) as other:
        async with start_bureau(other, tmp_path / "other"):
            pass  # writes that database's own genesis entry
        with pytest.raises(StartRefused, match="another ledger"):
            async with start_bureau(database_url, tmp_path, read_database_url=other):
                pass


async def test_a_report_the_replica_has_not_replayed_is_served_from_the_primary(
        bureau: BureauUnderTest, urls: tuple[str, str]) -> None:
    primary_url, replica_url = urls
    rep = await bureau.reporter()
    agent = kid(wire.generate_key())
    await bureau.accepted(rep, "fact", fact_payload("i-1", agent))
    await _paused(replica_url, True)
    try:
        bureau.clock.advance(bureau.config.epoch_seconds)
        assert await bureau.app[SEALER].seal_once()  # sealed and built on the primary
        counted = Counted()
        status, report = await get_raw(bureau, f"/v1/agents/{agent}/report")
        assert status == 200 and report["payloadType"].endswith("report.v1+json"), report
        status, _ = await get_raw(bureau, "/v1/checkpoints/latest")
        assert status == 200
        assert counted.since() == {("primary", "not_found_on_replica"): 2}
    finally:
        await _paused(replica_url, False)
    await wait_replayed(primary_url, replica_url)
    counted = Counted()
    assert (await get_raw(bureau, f"/v1/agents/{agent}/report"))[1] == report
    assert counted.since() == {("replica", "current"): 1}
