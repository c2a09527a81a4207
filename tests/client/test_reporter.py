"""The Reporter's durable spool against the real bureau: exactly once, through outages,
restarts and crashes; rejections are reported and final."""

from __future__ import annotations

import asyncio
import os
import sys
import textwrap
from pathlib import Path
from typing import Any

import nacl.signing
import pytest

import reporters
from reporters.models import FactPayload
from tests.client.helpers import DEAD_URL, fact_counts
from tests.support import BureauUnderTest, start_bureau

#: Short backoff so that outages in these tests cost fractions of a second.
FAST_BASE, FAST_CAP = 0.05, 0.2


def reporter_on(key: nacl.signing.SigningKey | None, url: str, spool: Path,
                **options: Any) -> reporters.Reporter:
    """A Reporter with test-speed backoff."""
    return reporters.Reporter(key or reporters.generate_key(), url, spool,
                              backoff_base=FAST_BASE, max_backoff=FAST_CAP, **options)


def facts(reporter: reporters.Reporter, prefix: str, n: int, subject: str) -> list[FactPayload]:
    return [reporter.fact(f"{prefix}-{i}", subject, latency_ms=i, well_formed=True)
            for i in range(n)]


async def test_facts_through_the_spool_are_admitted_exactly_once(
        bureau: BureauUnderTest, tmp_path: Path) -> None:
    key = await bureau.reporter(("facts",))
    subject = reporters.key_id(reporters.generate_key())
    async with reporter_on(key, bureau.url, tmp_path / "spool") as reporter:
        batch = facts(reporter, "once", 1200, subject)  # more than two batches of 500
        await asyncio.gather(*(reporter.send(f) for f in batch))
        await asyncio.wait_for(reporter.flush(), 30)
        assert reporter.pending == 0 and reporter.rejections == []
        assert await fact_counts(bureau.database_url) == (1200, 1200)

        # The same payloads again: the same envelopes, answered "duplicate", dropped.
        await asyncio.gather(*(reporter.send(f) for f in batch[:600]))
        await asyncio.wait_for(reporter.flush(), 30)
        assert reporter.pending == 0 and reporter.rejections == []
    assert await fact_counts(bureau.database_url) == (1200, 1200)


async def test_spool_survives_bureau_outage_and_client_restart(
        database_url: str, tmp_path: Path) -> None:
    spool = tmp_path / "spool"
    subject = reporters.key_id(reporters.generate_key())
    async with start_bureau(database_url, tmp_path / "home") as first:
        key = await first.reporter(("facts",))
        old_url = first.url
        r1 = reporter_on(key, first.url, spool)
        await r1.start()
        delivered = facts(r1, "a", 150, subject)
        await asyncio.gather(*(r1.send(f) for f in delivered))
        await asyncio.wait_for(r1.flush(), 20)
        # Sent while up, then the client is closed mid-way: some of these may be in
        # flight, some committed without their answer being read, some never sent.
        await asyncio.gather(*(r1.send(f) for f in facts(r1, "b", 150, subject)))
        await r1.close()
    # The bureau is down. A new client on the same spool resumes, and takes more.
    r2 = reporter_on(key, old_url, spool)
    await r2.start()
    await asyncio.gather(*(r2.send(f) for f in facts(r2, "c", 150, subject)))
    assert r2.pending >= 150
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(r2.flush(), 0.5)
    assert r2.pending >= 150
    # The bureau comes back, on another port, on the same database.
    async with start_bureau(database_url, tmp_path / "home") as second:
        r2.base_url = second.url
        await asyncio.gather(*(r2.send(f) for f in facts(r2, "d", 150, subject)))
        await asyncio.wait_for(r2.flush(), 30)
        assert r2.pending == 0 and r2.rejections == []
        await r2.close()
        assert await fact_counts(database_url) == (600, 600)


_CRASHING_GATEWAY = textwrap.dedent("""
    import asyncio, os, sys
    import reporters

    async def main() -> None:
        key_file, url, spool, n, subject = sys.argv[1:]
        reporter = reporters.Reporter(reporters.load_key(key_file), url, spool)
        for i in range(int(n)):
            await reporter.send(reporter.fact(f"crash-{i}", subject))
        print("spooled", flush=True)
        os._exit(0)  # no close, no flush: the process just ends, as in a crash

    asyncio.run(main())
""")


@pytest.mark.slow
async def test_spooled_facts_survive_a_crash_of_the_gateway(
        bureau: BureauUnderTest, tmp_path: Path) -> None:
    key = await bureau.reporter(("facts",))
    key_file = tmp_path / "gateway.key"
    reporters.save_key(key, key_file)
    spool = tmp_path / "spool"
    subject = reporters.key_id(reporters.generate_key())
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _CRASHING_GATEWAY, str(key_file), DEAD_URL, str(spool), "40",
        subject, stdout=asyncio.subprocess.PIPE, cwd=os.getcwd())
    out, _ = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 0 and out.strip() == b"spooled"
    assert await fact_counts(bureau.database_url) == (0, 0)
    async with reporter_on(key, bureau.url, spool) as reporter:
        assert reporter.pending == 40  # resumed from disk
        await asyncio.wait_for(reporter.flush(), 20)
    assert await fact_counts(bureau.database_url) == (40, 40)


async def test_a_rejected_fact_is_reported_and_not_retried(
        bureau: BureauUnderTest, tmp_path: Path) -> None:
    key = await bureau.reporter(("facts",))  # no "probes" role
    subject = reporters.key_id(reporters.generate_key())
    seen: list[reporters.Rejection] = []
    async with reporter_on(key, bureau.url, tmp_path / "spool",
                             on_rejection=seen.append) as reporter:
        await reporter.send(reporter.fact("i-1", subject, latency_ms=100))
        await asyncio.wait_for(reporter.flush(), 10)
        # A different fact for the same interaction is a rewrite; a probe needs a role.
        await reporter.send(reporter.fact("i-1", subject, latency_ms=200))
        await reporter.send(reporter.probe("i-2", subject, "known-answer-7", passed=True))
        await reporter.send(reporter.fact("i-3", subject))
        await asyncio.wait_for(reporter.flush(), 10)  # returns: nothing is retried
        assert reporter.pending == 0
        assert [(r.code, r.payload_type) for r in reporter.rejections] == [
            ("CONFLICTING_FACT", "fact"), ("MISSING_ROLE", "probe")]
        assert seen == reporter.rejections
        conflict = seen[0]
        assert conflict.payload["latency_ms"] == 200 and conflict.detail
        assert conflict.envelope["signatures"][0]["keyid"] == reporter.key_id
    assert await fact_counts(bureau.database_url) == (2, 2)


async def test_unregistered_reporter_rejections_do_not_block_the_rest(
        bureau: BureauUnderTest, tmp_path: Path) -> None:
    stranger = reporters.generate_key()
    subject = reporters.key_id(reporters.generate_key())
    async with reporter_on(stranger, bureau.url, tmp_path / "spool") as reporter:
        await asyncio.gather(*(reporter.send(f) for f in facts(reporter, "x", 5, subject)))
        await asyncio.wait_for(reporter.flush(), 10)
        assert {r.code for r in reporter.rejections} == {"UNKNOWN_REPORTER"}
        assert len(reporter.rejections) == 5


async def test_send_waits_when_the_spool_is_full(
        bureau: BureauUnderTest, tmp_path: Path) -> None:
    key = await bureau.reporter(("facts",))
    subject = reporters.key_id(reporters.generate_key())
    spool = tmp_path / "spool"
    async with reporter_on(key, DEAD_URL, spool, max_spooled=3) as reporter:
        for f in facts(reporter, "bp", 3, subject):
            await reporter.send(f)
        with pytest.raises(TimeoutError):  # no room: send waits (backpressure)
            await asyncio.wait_for(reporter.send(reporter.fact("bp-extra", subject)), 0.3)
        assert reporter.pending == 3
        reporter.base_url = bureau.url  # the bureau is reachable: room comes back
        await asyncio.wait_for(reporter.send(reporter.fact("bp-extra", subject)), 10)
        await asyncio.wait_for(reporter.flush(), 10)
    assert await fact_counts(bureau.database_url) == (4, 4)


async def test_one_spool_one_reporter(tmp_path: Path) -> None:
    key = reporters.generate_key()
    async with reporters.Reporter(key, DEAD_URL, tmp_path / "spool"):
        second = reporters.Reporter(key, DEAD_URL, tmp_path / "spool")
        with pytest.raises(reporters.BureauClientError) as info:
            await second.start()
        assert info.value.code == "SPOOL_IN_USE" and info.value.status is None
    # Released on close: the next one opens it.
    async with reporters.Reporter(key, DEAD_URL, tmp_path / "spool") as third:
        assert third.pending == 0


async def test_closed_reporter_refuses_sends(tmp_path: Path) -> None:
    reporter = reporters.Reporter(reporters.generate_key(), DEAD_URL, tmp_path / "spool")
    await reporter.start()
    await reporter.close()
    subject = reporters.key_id(reporters.generate_key())
    with pytest.raises(reporters.BureauClientError) as info:
        await reporter.send(reporter.fact("late", subject))
    assert info.value.code == "CLOSED"


def test_builders_validate_before_signing(tmp_path: Path) -> None:
    reporter = reporters.Reporter(reporters.generate_key(), DEAD_URL, tmp_path / "spool")
    with pytest.raises(reporters.BureauClientError) as info:
        reporter.fact("has space", reporters.key_id(reporters.generate_key()))
    assert (info.value.code, info.value.path, info.value.status) == ("SCHEMA", "/interaction",
                                                                     None)
    with pytest.raises(reporters.BureauClientError) as info:
        reporter.fact("ok", "ed25519:nope")
    assert info.value.path == "/subject"
