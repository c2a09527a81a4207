"""Several real ``bureau serve`` processes on one database, and crashes (SPEC §5, §9)."""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path

import aiohttp
import asyncpg
import nacl.signing
import pytest

from reporters import wire
from tests.processes import ProgressKiller, ServeProcess, bureau_env, post_batch, run_cli
from tests.support import fact_payload, registration

pytestmark = pytest.mark.slow


def _facts(rep: nacl.signing.SigningKey, n: int, prefix: str) -> list[bytes]:
    subjects = [wire.signing_key_id(wire.generate_key()) for _ in range(20)]
    return [json.dumps(wire.sign_payload(
        rep, "fact", fact_payload(f"{prefix}-{i}", subjects[i % 20]))).encode()
        for i in range(n)]


async def _register(url: str, admin: nacl.signing.SigningKey,
                    rep: nacl.signing.SigningKey) -> None:
    env = wire.sign_payload(admin, "reporter", registration(rep, operator="op"))
    async with aiohttp.ClientSession() as s, s.post(url + "/v1/evidence", json=env) as resp:
        assert resp.status in (200, 201), await resp.text()


async def _chain_facts(database_url: str) -> tuple[list[int], int, int]:
    conn = await asyncpg.connect(database_url)
    try:
        seqs = [r["seq"] for r in await conn.fetch("SELECT seq FROM entries ORDER BY seq")]
        facts = await conn.fetchval("SELECT count(*) FROM entries WHERE kind = 'fact'")
        distinct = await conn.fetchval(
            "SELECT count(DISTINCT content_key) FROM entries WHERE kind = 'fact'")
    finally:
        await conn.close()
    return seqs, facts, distinct


async def test_two_processes_one_chain(database_url: str, tmp_path: Path) -> None:
    admin, rep = wire.generate_key(), wire.generate_key()
    env = bureau_env(database_url, tmp_path, wire.signing_key_id(admin))
    servers = [ServeProcess(env, tmp_path / f"serve-{i}.log") for i in range(2)]
    await asyncio.gather(*(s.start() for s in servers))  # both migrate at once
    try:
        await _register(servers[0].url, admin, rep)
        lines = _facts(rep, 2000, "two")
        batches = [lines[i:i + 100] for i in range(0, 2000, 100)]
        async with aiohttp.ClientSession() as session:
            results = await asyncio.gather(*(
                post_batch(session, servers[i % 2].url, b, timeout=30)
                for i, b in enumerate(batches)))
        assert all(r["status"] == "accepted" for batch in results for r in batch)
    finally:
        for s in servers:
            s.stop()
    seqs, facts, distinct = await _chain_facts(database_url)
    # both processes started together: one genesis entry between them, then the rest
    assert seqs == list(range(1, 2003)), "seqs are contiguous from 1"
    assert facts == distinct == 2000
    verified = run_cli(env, "verify")
    assert verified.returncode == 0, verified.stderr
    assert "2002 entries" in verified.stdout


async def test_kill_9_loses_nothing_and_duplicates_nothing(database_url: str,
                                                           tmp_path: Path) -> None:
    """kill -9 at random moments while a client streams 3,000 facts and re-sends every
    batch that got no answer: exactly 3,000 fact entries, and the chain verifies."""
    rnd = random.Random(20261130)
    admin, rep = wire.generate_key(), wire.generate_key()
    env = bureau_env(database_url, tmp_path, wire.signing_key_id(admin))
    server = ServeProcess(env, tmp_path / "serve.log")
    await server.start()
    await _register(server.url, admin, rep)
    lines = _facts(rep, 3000, "crash")
    batches = [lines[i:i + 100] for i in range(0, 3000, 100)]
    acknowledged: dict[str, int] = {}
    # Six kills, each a random moment after a randomly chosen batch was acknowledged.
    killer = ProgressKiller(server, rnd.sample(range(1, len(batches)), 6), rnd, max_delay=0.5)

    async def client() -> None:
        async with aiohttp.ClientSession() as session:
            for n, batch in enumerate(batches):
                while True:
                    try:
                        results = await post_batch(session, server.url, batch, timeout=30)
                    except (aiohttp.ClientError, ConnectionError, TimeoutError):
                        await asyncio.sleep(0.05)
                        continue  # no answer: re-send the very same envelopes
                    assert all(r["status"] in ("accepted", "duplicate") for r in results)
                    for r in results:
                        assert acknowledged.setdefault(r["id"], r["seq"]) == r["seq"]
                    break
                await killer.reached(n + 1)
            await killer.settled()

    try:
        await client()
    finally:
        server.stop()
    assert killer.kills == 6
    assert len(acknowledged) == 3000
    await assert_all_acknowledged(database_url, env, acknowledged, 3000)


async def assert_all_acknowledged(database_url: str, env: dict[str, str],
                                  acknowledged: dict[str, int], sent: int) -> None:
    """After a crash run that sent ``sent`` facts past a genesis and a reporter: each
    once, none lost, every acknowledged one at the seq it was given, the chain verifies."""
    seqs, facts, distinct = await _chain_facts(database_url)
    assert facts == distinct == sent, "none lost, none twice"
    assert seqs == list(range(1, sent + 3))  # genesis, reporter, the facts
    conn = await asyncpg.connect(database_url)
    try:
        stored = {r["id"]: r["seq"] for r in await conn.fetch(
            "SELECT id, seq FROM entries WHERE kind = 'fact'")}
    finally:
        await conn.close()
    assert stored == acknowledged, "every acknowledged entry is there, at the seq it was given"
    verified = run_cli(env, "verify")
    assert verified.returncode == 0, verified.stderr
