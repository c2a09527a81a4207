"""Holding records in the spool until they can be signed, releasing them atomically, and
what the sender tells ``on_delivery`` — against the real bureau."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path

import reporters
from reporters import Delivery
from tests.client.helpers import DEAD_URL, fact_counts
from tests.client.test_reporter import reporter_on
from tests.support import (
    BureauUnderTest,
    fresh_database,
    now_text,
    registration,
    start_bureau,
    until,
)


def _rows(spool: Path) -> tuple[set[str], int]:
    """(held names, spooled envelopes) as the spool's database has them on disk."""
    with sqlite3.connect(spool / "spool.sqlite3") as db:
        held = {name for (name,) in db.execute("SELECT name FROM held")}
        (spooled,) = db.execute("SELECT count(*) FROM spool").fetchone()
    return held, int(spooled)


async def test_held_records_survive_a_reopen_and_leave_with_their_envelope(
        bureau: BureauUnderTest, tmp_path: Path) -> None:
    key = await bureau.reporter(("facts",))
    spool = tmp_path / "spool"
    subject = reporters.key_id(reporters.generate_key())
    async with reporter_on(key, DEAD_URL, spool) as r1:
        await r1.hold({"i-1": b"first", "i-2": b"second"})
        await r1.hold({"i-1": b"first, revised"})  # a name held again is replaced
        assert await r1.held() == {"i-1": b"first, revised", "i-2": b"second"}
        assert r1.pending == 0  # held records are not envelopes: nothing to send yet
    assert _rows(spool) == ({"i-1", "i-2"}, 0)

    async with reporter_on(key, DEAD_URL, spool) as r2:  # the next run finds them
        assert await r2.held() == {"i-1": b"first, revised", "i-2": b"second"}
        await r2.send(r2.fact("i-1", subject, latency_ms=5), releasing="i-1")
        assert await r2.held() == {"i-2": b"second"}
        assert r2.pending == 1
    assert _rows(spool) == ({"i-2"}, 1)  # one transaction moved it: held -> spooled

    async with reporter_on(key, bureau.url, spool) as r3:
        await asyncio.wait_for(r3.flush(), 20)
        assert await r3.held() == {"i-2": b"second"}  # never sent: it is not a payload
    assert await fact_counts(bureau.database_url) == (1, 1)


async def test_on_delivery_counts_each_batch(bureau: BureauUnderTest, tmp_path: Path) -> None:
    key = await bureau.reporter(("facts",))
    subject = reporters.key_id(reporters.generate_key())
    seen: list[Delivery] = []
    at = now_text()  # the same fact twice is the same envelope only with the same time
    async with reporter_on(key, DEAD_URL, tmp_path / "spool", on_delivery=seen.append) as r:
        await r.send(r.fact("d-1", subject, observed_at=at, latency_ms=1))
        while not seen:  # the bureau is not there: the attempt fails as a whole
            await asyncio.sleep(0.01)
        assert seen[0] == Delivery(1, failure="UNAVAILABLE")
        r.base_url = bureau.url
        await asyncio.wait_for(r.flush(), 20)
        # Delivered already: duplicate. Then a rewrite of it: rejected.
        await r.send(r.fact("d-1", subject, observed_at=at, latency_ms=1))
        await r.send(r.fact("d-1", subject, observed_at=at, latency_ms=2))
        await r.send(r.fact("d-2", subject, observed_at=at, latency_ms=3))
        await asyncio.wait_for(r.flush(), 20)
    answered = [d for d in seen if d.failure is None]
    assert sum(d.accepted for d in answered) == 2
    assert sum(d.duplicate for d in answered) == 1
    assert sum(d.rejected for d in answered) == 1
    first = answered[0]
    assert (first.lines, first.accepted, first.first_seq) == (1, 1, first.last_seq)
    assert isinstance(first.first_seq, int) and first.first_seq > 1
    last_seqs = [d.last_seq for d in answered if d.last_seq is not None]
    assert last_seqs == sorted(last_seqs)


async def test_kept_envelopes_refill_a_bureau_restored_without_them(
        pg_server_url: str, tmp_path: Path) -> None:
    """After a restore that lost acknowledged entries, a gateway that kept what it had
    delivered sends it again (docs/runbook.md): the bureau that lost the entries gets
    them back, one that still has them answers duplicate."""
    key = reporters.generate_key()
    subject = reporters.key_id(reporters.generate_key())
    spool = tmp_path / "spool"

    async def registered(b: BureauUnderTest) -> None:
        await b.accepted(b.admin, "reporter", registration(reporters.key_id(key)))

    async with fresh_database(pg_server_url) as before_url, \
            fresh_database(pg_server_url) as restored_url, \
            start_bureau(before_url, tmp_path / "a") as before, \
            start_bureau(restored_url, tmp_path / "b") as restored:
        await registered(before)
        await registered(restored)  # the restore kept the registration, lost the facts
        async with reporter_on(key, before.url, spool, keep_delivered=3600) as r:
            for i in range(3):
                await r.send(r.fact(f"k-{i}", subject, latency_ms=i))
            await asyncio.wait_for(r.flush(), 20)
            assert _rows(spool) == (set(), 0)
            r.base_url = restored.url
            assert await r.resend_delivered(since=time.time() + 60) == 0  # none that late
            assert await r.resend_delivered() == 3
            await asyncio.wait_for(r.flush(), 20)
            r.base_url = before.url
            assert await r.resend_delivered() == 3
            await asyncio.wait_for(r.flush(), 20)
            assert r.rejections == []
        assert await fact_counts(restored_url) == (3, 3)
        assert await fact_counts(before_url) == (3, 3)  # answered duplicate: nothing new
        assert _kept(spool) == 3

        # Kept for the retention only: it is applied whenever a batch is answered.
        async with reporter_on(key, before.url, spool, keep_delivered=0) as forgetful:
            await forgetful.send(forgetful.fact("k-9", subject))
            await asyncio.wait_for(forgetful.flush(), 20)
            assert await forgetful.resend_delivered() == 0
        assert _kept(spool) == 0


def _kept(spool: Path) -> int:
    with sqlite3.connect(spool / "spool.sqlite3") as db:
        (kept,) = db.execute("SELECT count(*) FROM delivered").fetchone()
    return int(kept)


async def test_a_release_rides_with_the_next_hold_and_never_waits_long(tmp_path: Path) -> None:
    """Releasing spools facts whose records are on disk already: nobody waits on that
    write, so it starts no transaction (no fsync) of its own. It goes with the next
    hold; with none, ``linger`` seconds later; at a close, at once."""
    spool = tmp_path / "spool"
    subject = reporters.key_id(reporters.generate_key())
    async with reporter_on(None, DEAD_URL, spool) as r:
        await r.hold({"i-1": b"one", "i-2": b"two"})
        r._spool.linger = 3600.0  # no hold comes "soon" here: only the next one
        releasing = asyncio.create_task(r.release([("i-1", r.fact("i-1", subject))]))
        await until("the release to be admitted", lambda: r.pending == 1)
        assert _rows(spool) == ({"i-1", "i-2"}, 0) and not releasing.done()
        await r.hold({"i-3": b"three"})  # its transaction carries the release
        await releasing
        assert _rows(spool) == ({"i-2", "i-3"}, 1)

        # The last word on a name wins, whatever the order: released, then held again.
        releasing = asyncio.create_task(r.release([("i-2", r.fact("i-2", subject))]))
        await until("the release to be admitted", lambda: r.pending == 2)
        await r.hold({"i-2": b"two, again"})
        await releasing
        assert await r.held() == {"i-2": b"two, again", "i-3": b"three"}

        closing = asyncio.create_task(r.release([("i-3", r.fact("i-3", subject))]))
        await until("the release to be admitted", lambda: r.pending == 3)
    await closing  # the close wrote what lingered
    assert _rows(spool) == ({"i-2"}, 3)

    async with reporter_on(None, DEAD_URL, spool) as r:  # with nothing to ride with
        await asyncio.wait_for(r.release([("i-2", r.fact("i-2", subject, latency_ms=1))]), 30)
    assert _rows(spool) == (set(), 4)
