"""A ``keys`` rotation under ``serve --workers 2`` with live traffic (issue 35, looked at):
intake never stops (it signs nothing of the bureau's), every acknowledged fact is in the
ledger exactly once, every process of the old key stops signing and says so on
``/readyz``, and a restart with the new key file takes over; ``bureau verify`` passes."""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path

import aiohttp
import asyncpg
import nacl.signing
import pytest

from bureau import keyfiles
from bureau.verify import verify_database
from reporters import Admin, wire
from tests.processes import ServeProcess, bureau_env
from tests.support import fact_payload, kid, registration, until

pytestmark = pytest.mark.slow


async def _post_batches(url: str, reporter: nacl.signing.SigningKey, stop: asyncio.Event,
                        acknowledged: list[str]) -> None:
    subject = wire.signing_key_id(wire.generate_key())
    n = 0
    async with aiohttp.ClientSession() as session:
        while not stop.is_set():
            ids = [f"rot-{n + i}" for i in range(20)]
            n += 20
            body = b"".join(json.dumps(wire.sign_payload(reporter, "fact", fact_payload(
                i, subject))).encode() + b"\n" for i in ids)
            async with session.post(url + "/v1/evidence/batch", data=body,
                                    headers={"Content-Type": "application/x-ndjson"}) as resp:
                assert resp.status == 200, await resp.text()
                answers = [json.loads(line) for line in (await resp.text()).splitlines()]
            acknowledged += [i for i, a in zip(ids, answers, strict=True)
                             if a.get("status") in ("accepted", "duplicate")]


async def _ready(url: str) -> int:
    async with aiohttp.ClientSession() as s, s.get(url + "/readyz") as resp:
        return resp.status


async def test_a_rotation_with_two_workers_and_live_traffic(database_url: str,
                                                           tmp_path: Path) -> None:
    admin, old, new = wire.generate_key(), wire.generate_key(), wire.generate_key()
    keyfiles.write_key(tmp_path / "old.key", old)
    keyfiles.write_key(tmp_path / "new.key", new)
    env = bureau_env(database_url, tmp_path, kid(admin), BUREAU_SIGNING_KEY=str(
        tmp_path / "old.key"), BUREAU_CHECKPOINT_INTERVAL="0.5")
    server = ServeProcess(env, tmp_path / "serve.log", workers=2)
    await server.start()
    reporter = wire.generate_key()
    async with aiohttp.ClientSession() as s, s.post(
            server.url + "/v1/evidence", json=wire.sign_payload(admin, "reporter", registration(
                kid(reporter), ("facts",)))) as resp:
        assert resp.status == 201, await resp.text()
    stop, acknowledged = asyncio.Event(), list[str]()
    traffic = asyncio.create_task(_post_batches(server.url, reporter, stop, acknowledged))
    try:
        await until("traffic is flowing", lambda: len(acknowledged) >= 100)
        async with Admin(admin, server.url) as client:
            await client.set_keys(kid(new), [kid(admin)])
        seen = len(acknowledged)
        await until("intake goes on after the rotation", lambda: len(acknowledged) >= seen + 200)
        await until("the old key's processes say so", lambda: _ready_is(server.url, 503))
    finally:
        stop.set()
        await traffic
        server.stop()
    env["BUREAU_SIGNING_KEY"] = str(tmp_path / "new.key")
    server = ServeProcess(env, tmp_path / "serve-2.log", port=server.port, workers=2)
    await server.start()  # ready: the key in force
    try:
        async with aiohttp.ClientSession() as s, s.get(server.url + "/v1/bureau") as resp:
            info = await resp.json()
        assert info["key"] == kid(new) and [k["key"] for k in info["keys"]] == [kid(old),
                                                                              kid(new)]
    finally:
        server.stop()
    conn = await asyncpg.connect(database_url)
    try:
        rows = await conn.fetch("SELECT entry FROM entries WHERE kind = 'fact'")
        await verify_database(conn)
    finally:
        await conn.close()
    stored = [json.loads(base64.b64decode(json.loads(r["entry"])["envelope"]["payload"]))
              ["interaction"] for r in rows]
    assert len(stored) == len(set(stored))  # none twice
    assert set(acknowledged) <= set(stored)  # none lost


async def _ready_is(url: str, status: int) -> bool:
    """Both workers answer ``status`` (each connection may land on either)."""
    return all([await _ready(url) == status for _ in range(6)])
