"""Epochs and seals (SPEC §8): one seal per elapsed epoch however many processes run,
the admin ``seal`` envelope, empty epochs, and what a seal and a checkpoint say."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import aiohttp
import asyncpg
import nacl.signing
import pytest

from bureau.http.keys import SEALER
from bureau.intake.clock import epoch_of
from reporters import wire
from tests.processes import ServeProcess, bureau_env
from tests.support import BureauUnderTest, fact_payload, kid, registration, start_bureau
from tests.transparency.reference import mth
from tests.views.support import (
    EPOCH_SECONDS,
    World,
    bureau_key,
    get,
    next_epoch,
    now_text,
    open_envelope,
    seal_counts,
    settle,
)


async def seal_entries(database_url: str) -> list[dict[str, object]]:
    conn = await asyncpg.connect(database_url)
    try:
        rows = await conn.fetch("SELECT seq, epoch, entry FROM entries WHERE kind = 'seal'"
                                " ORDER BY seq")
    finally:
        await conn.close()
    return [{"entry_seq": r["seq"], "entry_epoch": r["epoch"], **json.loads(r["entry"])["body"]}
            for r in rows]


async def wait_for_checkpoint(bureau: BureauUnderTest, epoch: int) -> bytes:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        status, body = await get(bureau, f"/v1/checkpoints/{epoch}")
        if status == 200:
            return body
        await asyncio.sleep(0.05)
    raise AssertionError(f"no checkpoint for epoch {epoch}")


async def test_seal_body_and_checkpoint_name_the_last_entry_of_the_epoch(
        bureau: BureauUnderTest) -> None:
    w = await World.make(bureau)
    a = await w.agent("alpha")
    await w.fact(a)
    epoch = epoch_of(bureau.clock(), EPOCH_SECONDS)
    assert await next_epoch(bureau) == [epoch]
    [seal] = await seal_entries(bureau.database_url)
    conn = await asyncpg.connect(bureau.database_url)
    try:
        last = await conn.fetchrow("SELECT seq, id FROM entries WHERE epoch <= $1"
                                   " ORDER BY seq DESC LIMIT 1", epoch)
        count = await conn.fetchval("SELECT count(*) FROM entries WHERE seq <= $1", last["seq"])
        ids = [r["id"] for r in await conn.fetch(
            "SELECT id FROM entries WHERE seq <= $1 ORDER BY seq", last["seq"])]
    finally:
        await conn.close()
    assert seal["epoch"] == epoch
    assert seal["entry_epoch"] == epoch + 1  # the seal entry itself lies in the next epoch
    assert (seal["seq"], seal["head"]) == (last["seq"], last["id"])
    status, body = await get(bureau, "/v1/checkpoints/latest")
    assert status == 200
    cp = open_envelope(body, await bureau_key(bureau))
    root = mth([bytes.fromhex(i) for i in ids]).hex()  # the tree by its definition
    assert cp == {"epoch": epoch, "seq": last["seq"], "head": last["id"], "entries": count,
                  "root": root}
    assert json.loads(body)["payloadType"] == "application/vnd.bureau.checkpoint.v1+json"


async def test_admin_seal_envelope_closes_elapsed_epochs(bureau: BureauUnderTest) -> None:
    w = await World.make(bureau)
    a = await w.agent("alpha")
    await w.fact(a)
    first = epoch_of(bureau.clock(), EPOCH_SECONDS)
    bureau.clock.advance(EPOCH_SECONDS)
    await w.fact(a)
    bureau.clock.advance(EPOCH_SECONDS)  # two epochs have elapsed, both busy
    assert await seal_counts(bureau.database_url) == {}
    await bureau.accepted(bureau.admin, "seal", {"requested_at": now_text()})
    # The seals are in the same commit as the admin's envelope: no sealer involved.
    assert await seal_counts(bureau.database_url) == {first: 1, first + 1: 1}
    body = await wait_for_checkpoint(bureau, first + 1)  # the sealer was woken
    assert open_envelope(body, await bureau_key(bureau))["epoch"] == first + 1
    # Sealing again closes nothing new: the admin's own entry lies in the open epoch.
    await bureau.accepted(bureau.admin, "seal", {"requested_at": now_text(1)})
    assert await seal_counts(bureau.database_url) == {first: 1, first + 1: 1}


async def test_a_seal_signed_by_anyone_but_an_admin_is_not_admin(
        bureau: BureauUnderTest) -> None:
    w = await World.make(bureau)
    a = await w.agent("alpha")
    await w.fact(a)
    bureau.clock.advance(EPOCH_SECONDS)
    for key in (a, w.reporter, wire.generate_key()):
        status, body = await bureau.submit(key, "seal", {"requested_at": now_text()})
        assert (status, body["code"]) == (422, "NOT_ADMIN")
    assert await seal_counts(bureau.database_url) == {}


async def test_epochs_with_nothing_admitted_get_no_seal(bureau: BureauUnderTest) -> None:
    w = await World.make(bureau)
    a = await w.agent("alpha")
    start = epoch_of(bureau.clock(), EPOCH_SECONDS)
    bureau.clock.advance(3 * EPOCH_SECONDS)  # start+1, start+2 are empty
    assert await settle(bureau) == [start]
    assert await next_epoch(bureau) == []  # start+3 holds only the seal entry
    await w.fact(a)
    assert await next_epoch(bureau) == [start + 4]
    assert await seal_counts(bureau.database_url) == {start: 1, start + 4: 1}
    for empty in (start + 1, start + 2, start + 3):
        assert (await get(bureau, f"/v1/checkpoints/{empty}"))[0] == 404


async def test_two_apps_on_one_database_seal_each_epoch_once(
        database_url: str, tmp_path: Path) -> None:
    async with start_bureau(database_url, tmp_path / "one", epoch_seconds=EPOCH_SECONDS) as b1, \
            start_bureau(database_url, tmp_path / "two", epoch_seconds=EPOCH_SECONDS) as b2:
        w1, w2 = await World.make(b1), await World.make(b2)
        a = await w1.agent("alpha")
        for _ in range(3):
            await w1.fact(a)
            await w2.fact(kid(a))
            b1.clock.advance(EPOCH_SECONDS)
            b2.clock.advance(EPOCH_SECONDS)
            # both sealers race for the same epochs, several times over
            await asyncio.gather(*(b.app[SEALER].seal_once(force=True)
                                   for b in (b1, b2, b1, b2)))
        counts = await seal_counts(database_url)
        assert len(counts) == 3 and set(counts.values()) == {1}
        # exactly one of them built each epoch's reports; both serve the same bytes
        for epoch in counts:
            one, two = await get(b1, f"/v1/checkpoints/{epoch}"), \
                await get(b2, f"/v1/checkpoints/{epoch}")
            assert one == two and one[0] == 200


@pytest.mark.slow
async def test_two_serve_processes_seal_each_epoch_once(database_url: str,
                                                         tmp_path: Path) -> None:
    """Real ``bureau serve`` processes, one-second epochs, sealers ticking every 50 ms."""
    admin = wire.generate_key()
    env = bureau_env(database_url, tmp_path, kid(admin), BUREAU_EPOCH_SECONDS="1",
                     BUREAU_SEAL_INTERVAL="0.05")
    procs = [ServeProcess(env, tmp_path / f"serve-{i}.log") for i in range(2)]
    try:
        for p in procs:
            await p.start()
        rep = wire.generate_key()
        async with aiohttp.ClientSession() as session:
            async def post(url: str, key: nacl.signing.SigningKey, name: str,
                           payload: dict[str, object]) -> None:
                async with session.post(url + "/v1/evidence",
                                        json=wire.sign_payload(key, name, payload)) as resp:
                    assert resp.status in (200, 201), await resp.text()

            await post(procs[0].url, admin, "reporter", registration(rep, operator="gw co"))
            subject = kid(wire.generate_key())
            deadline, n = time.monotonic() + 4.5, 0
            while time.monotonic() < deadline:
                n += 1
                await post(procs[n % 2].url, rep, "fact", fact_payload(f"ia-{n}", subject))
                await asyncio.sleep(0.02)
        conn = await asyncpg.connect(database_url)
        try:
            busy = {r["epoch"] for r in await conn.fetch(
                "SELECT DISTINCT epoch FROM entries WHERE kind <> 'seal'")}
        finally:
            await conn.close()
        # Wait on progress, not a fixed time: the last busy epoch elapses, then a sealer
        # seals it (however long this machine takes to get there).
        deadline = time.monotonic() + 60
        while max(busy) not in (counts := await seal_counts(database_url)):
            assert time.monotonic() < deadline, f"epoch {max(busy)} never sealed: {counts}"
            await asyncio.sleep(0.05)
        assert set(counts.values()) == {1}, counts
        assert len(counts) >= 4 and set(counts) <= busy
        assert max(busy) - 1 in counts or max(busy) in counts
    finally:
        for p in procs:
            p.stop()
