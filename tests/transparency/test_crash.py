"""kill -9 of ``bureau serve`` while entries stream in, tree heads are published every
0.1 s and epochs of 2 s are sealed: every note and every epoch checkpoint signed before
a crash is consistent with every one after (each has the root the entries give at its
size), the stored tree is the entries' tree, and ``bureau rebuild`` and ``bureau verify``
agree. Kills are triggered by the client's progress (tests/processes.ProgressKiller),
never by sleeps."""

from __future__ import annotations

import asyncio
import base64
import json
import random
import time
from pathlib import Path

import aiohttp
import asyncpg
import pytest

from bureau.transparency.tree import TreeCheck
from reporters import VerifiedCheckpoint, verify_consistency, verify_note, wire
from tests.processes import ProgressKiller, ServeProcess, bureau_env, run_cli
from tests.support import fact_payload, registration
from tests.transparency import reference

pytestmark = pytest.mark.slow

BATCHES = 30
PER_BATCH = 40
KILLS = (4, 11, 17, 24)


async def _send(session: aiohttp.ClientSession, url: str, lines: list[bytes]) -> bool:
    """One batch; False when the bureau died under it (it is then sent again)."""
    try:
        async with session.post(url + "/v1/evidence/batch", data=b"\n".join(lines),
                                headers={"Content-Type": "application/x-ndjson"}) as resp:
            if resp.status != 200:
                return False
            results = [json.loads(line) for line in (await resp.text()).splitlines()]
    except (aiohttp.ClientError, OSError):
        return False
    assert all(r["status"] in ("accepted", "duplicate") for r in results), results
    return True


async def _last_busy_epoch_checkpointed(database_url: str) -> bool:
    """Has the last epoch holding anything but seals been sealed and its checkpoint
    signed? Then nothing is left to seal (seals alone do not make an epoch busy) and
    stopping the bureau interrupts no report build, which ``rebuild`` would otherwise
    find only on its side."""
    conn = await asyncpg.connect(database_url)
    try:
        return bool(await conn.fetchval(
            "SELECT EXISTS (SELECT 1 FROM checkpoints WHERE epoch ="
            " (SELECT max(epoch) FROM entries WHERE kind <> 'seal'))"))
    finally:
        await conn.close()


async def _observe(session: aiohttp.ClientSession, url: str, vkey: str,
                   notes: dict[int, VerifiedCheckpoint], checkpoints: list[dict[str, int]],
                   ) -> None:
    """Keep every note and epoch checkpoint the bureau shows (it may be down: skip)."""
    try:
        async with session.get(url + "/checkpoint") as resp:
            if resp.status == 200:
                head = verify_note(await resp.text(), vkey)
                notes.setdefault(head.size, head)
        async with session.get(url + "/v1/checkpoints/latest") as resp:
            if resp.status == 200:
                env = json.loads(await resp.read())
                checkpoints.append(json.loads(base64.b64decode(env["payload"])))
    except (aiohttp.ClientError, OSError):
        pass


async def test_heads_signed_before_a_crash_hold_after_it(database_url: str,
                                                         tmp_path: Path) -> None:
    admin, rep = wire.generate_key(), wire.generate_key()
    env = bureau_env(database_url, tmp_path / "home", wire.signing_key_id(admin),
                     BUREAU_CHECKPOINT_INTERVAL="0.1", BUREAU_EPOCH_SECONDS="2",
                     BUREAU_SEAL_INTERVAL="0.3", BUREAU_REPORT_WORKERS="1")
    server = ServeProcess(env, tmp_path / "serve.log")
    await server.start()
    notes: dict[int, VerifiedCheckpoint] = {}
    checkpoints: list[dict[str, int]] = []
    rnd = random.Random(20261201)
    killer = ProgressKiller(server, KILLS, rnd)
    subjects = [wire.signing_key_id(wire.generate_key()) for _ in range(7)]
    try:
        async with aiohttp.ClientSession() as session:
            async with session.get(server.url + "/v1/bureau") as resp:
                vkey = (await resp.json())["vkey"]
            registered = json.dumps(
                wire.sign_payload(admin, "reporter", registration(rep))).encode()
            assert await _send(session, server.url, [registered])
            for n in range(BATCHES):
                lines = [json.dumps(wire.sign_payload(rep, "fact", fact_payload(
                    f"ia-{n}-{i}", subjects[(n + i) % len(subjects)]))).encode()
                    for i in range(PER_BATCH)]
                while not await _send(session, server.url, lines):
                    await killer.settled()  # the bureau is coming back: send it again
                await _observe(session, server.url, vkey, notes, checkpoints)
                await killer.reached(n)
            await killer.settled()
            # The last head once published, and an epoch checkpoint: on a fast machine
            # the stream may end before its first 2 s epoch has elapsed and been sealed.
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                await _observe(session, server.url, vkey, notes, checkpoints)
                if max(notes) >= BATCHES * PER_BATCH + 2 and checkpoints \
                        and await _last_busy_epoch_checkpointed(database_url):
                    break
                await asyncio.sleep(0.1)
            latest = notes[max(notes)]
            for size, head in sorted(notes.items()):  # served after the last crash
                async with session.get(f"{server.url}/v1/proofs/consistency?from={size}"
                                       f"&to={latest.size}") as resp:
                    verify_consistency(await resp.json(), head, latest)
    finally:
        server.stop()
    print(f"\n{killer.kills} kills; {len(notes)} notes and {len(checkpoints)} epoch "
          f"checkpoints seen, up to size {latest.size}")
    assert killer.kills == len(KILLS)
    assert len(notes) > len(KILLS) and checkpoints, (len(notes), len(checkpoints))

    conn = await asyncpg.connect(database_url)
    try:
        ids = [r["id"] for r in await conn.fetch("SELECT id FROM entries ORDER BY seq")]
        heads = await conn.fetch("SELECT size, root FROM tree_heads ORDER BY size")
        tree = TreeCheck()
        await tree.compare(conn, ids)
        await tree.finish(conn)
    finally:
        await conn.close()
    assert tree.difference is None
    leaves = [bytes.fromhex(i) for i in ids]
    for size, head in notes.items():  # every note any client saw
        assert head.root == reference.mth(leaves[:size]), size
    for cp in checkpoints:  # every epoch checkpoint any client saw
        assert cp["root"] == reference.mth(leaves[:cp["entries"]]).hex(), cp
    for row in heads:  # every head the bureau ever signed
        assert bytes(row["root"]) == reference.mth(leaves[:row["size"]]), row["size"]

    rebuilt = run_cli(env, "rebuild")
    assert rebuilt.returncode == 0, rebuilt.stdout + rebuilt.stderr
    verified = run_cli(env, "verify")
    assert verified.returncode == 0, verified.stdout + verified.stderr
