"""``bureau rebuild`` on a live bureau (issue 20 finding 11). Run against a bureau with
2-second epochs, rebuild said DIFFERENT once in three runs on revision-2 main: a report
and a checkpoint of the latest epoch existed "only in the rebuild", because the service
was still building them. Now it compares only the epochs the service finished (their
checkpoint stored) and names the others; here it runs in a loop while a real ``bureau
serve`` with 1-second epochs seals and builds, and never reports a difference."""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path

import aiohttp
import asyncpg
import nacl.signing
import pytest

from reporters import wire
from tests.processes import BUREAU, ServeProcess, bureau_env
from tests.support import fact_payload, kid, registration

RUNS = 3


async def _feed(url: str, admin: nacl.signing.SigningKey) -> None:
    """Facts, for ever: every epoch is busy, so every second brings a seal to build."""
    rep = wire.generate_key()
    async with aiohttp.ClientSession() as session:
        async def post(key: nacl.signing.SigningKey, name: str,
                       payload: dict[str, object]) -> None:
            async with session.post(url + "/v1/evidence", json=wire.sign_payload(
                    key, name, payload)) as resp:
                assert resp.status in (200, 201), await resp.text()

        await post(admin, "reporter", registration(rep, operator="gw co"))
        n = 0
        while True:
            n += 1
            await post(rep, "fact", fact_payload(f"ia-{n}", kid(wire.generate_key())))
            await asyncio.sleep(0.02)


async def _sealed_epochs(database_url: str) -> int:
    conn = await asyncpg.connect(database_url)
    try:
        return int(await conn.fetchval("SELECT count(*) FROM checkpoints"))
    finally:
        await conn.close()


@pytest.mark.slow
async def test_rebuild_during_seals_never_reports_an_unfinished_epoch(
        database_url: str, tmp_path: Path) -> None:
    admin = wire.generate_key()
    env = bureau_env(database_url, tmp_path, kid(admin), BUREAU_EPOCH_SECONDS="1",
                     BUREAU_SEAL_INTERVAL="0.05", BUREAU_REPORT_WORKERS="1")
    server = ServeProcess(env, tmp_path / "serve.log")
    await server.start()
    feeder = asyncio.create_task(_feed(server.url, admin))
    outputs = []
    try:
        deadline = time.monotonic() + 60
        while await _sealed_epochs(database_url) < 2:  # progress, not a fixed time
            assert time.monotonic() < deadline and not feeder.done()
            await asyncio.sleep(0.05)
        for _ in range(RUNS):
            proc = await asyncio.create_subprocess_exec(
                *BUREAU, "rebuild", env=env, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE)
            out, err = await proc.communicate()
            text = out.decode() + err.decode()
            outputs.append(text)
            assert proc.returncode == 0, text
            assert "DIFFERENT" not in text and "identical" in text, text
            assert not feeder.done()
    finally:
        feeder.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await feeder
        server.stop()
    verify = await asyncio.create_subprocess_exec(
        *BUREAU, "verify", env=env, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE)
    out, err = await verify.communicate()
    assert verify.returncode == 0, out.decode() + err.decode()
