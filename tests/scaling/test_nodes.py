"""Several machines (docs/scaling.md "Several machines"): three ``bureau serve`` nodes on
different ports share one database; the one elected to build reports is killed (kill
-9) while it builds a sealed epoch's reports, and another node completes that epoch:
one report per agent, one checkpoint, one seal, no entry twice, and ``bureau verify``
and ``bureau rebuild`` agree with what was stored."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import aiohttp
import asyncpg
import nacl.signing
import pytest

from bureau import keyfiles
from reporters import wire
from tests.processes import ServeProcess, bureau_env, run_cli
from tests.support import fact_payload, registration, until

pytestmark = pytest.mark.slow

NODES = 3
AGENTS = 1500
FACTS_PER_ROUND = 3000
ATTEMPTS = 3
DEADLINE = 240.0


async def _post(session: aiohttp.ClientSession, url: str, lines: list[bytes]) -> None:
    async with session.post(url + "/v1/evidence/batch", data=b"\n".join(lines) + b"\n",
                            headers={"Content-Type": "application/x-ndjson"}) as resp:
        assert resp.status == 200, await resp.text()
        results = [json.loads(x) for x in (await resp.text()).splitlines()]
    assert all(r["status"] == "accepted" for r in results), results[:3]


async def _leads_reports(node: ServeProcess) -> bool:
    async with aiohttp.ClientSession() as s, s.get(node.ops_url + "/metrics") as resp:
        text = await resp.text()
    return 'bureau_leading{role="reports"} 1.0' in text


async def test_the_elected_node_killed_mid_seal_hands_over(database_url: str,
                                                           tmp_path: Path) -> None:
    admin, rep = wire.generate_key(), wire.generate_key()
    signing = wire.generate_key()
    keyfiles.write_key(tmp_path / "signing.key", signing)  # one bureau key, every node
    env = bureau_env(database_url, tmp_path, wire.signing_key_id(admin),
                     BUREAU_SIGNING_KEY=str(tmp_path / "signing.key"),
                     BUREAU_EPOCH_SECONDS="3", BUREAU_SEAL_INTERVAL="0.2",
                     BUREAU_CHECKPOINT_INTERVAL="1")
    nodes = [ServeProcess(env, tmp_path / f"node-{i}.log") for i in range(NODES)]
    await asyncio.gather(*(n.start() for n in nodes))
    subjects = [wire.signing_key_id(wire.generate_key()) for _ in range(AGENTS)]
    conn = await asyncpg.connect(database_url)
    try:
        async with aiohttp.ClientSession() as session:
            registered = wire.sign_payload(admin, "reporter", registration(rep, operator="op"))
            async with session.post(nodes[0].url + "/v1/evidence", json=registered) as r:
                assert r.status == 201, await r.text()
            killed = None
            for attempt in range(ATTEMPTS):
                killed = await _one_attempt(session, conn, nodes, rep, subjects, attempt)
                if killed is not None:
                    break
                # The node was killed after its build had finished: not mid-seal. Bring
                # it back and try with the next epoch.
                for n in nodes:
                    if n.proc is not None and n.proc.poll() is not None:
                        await n.start()
            assert killed is not None, f"no kill landed mid-build in {ATTEMPTS} epochs"
            epoch, victim = killed
            print(f"\nkill -9 of node {nodes.index(victim)} while it built epoch {epoch} "
                  f"(attempt {attempt + 1})")
            await until("another node to complete the epoch", lambda: conn.fetchval(
                "SELECT true FROM checkpoints WHERE epoch = $1", epoch), timeout=DEADLINE)
            survivors = [n for n in nodes if n is not victim]
            leaders = [n for n in survivors if await _leads_reports(n)]
            assert len(leaders) == 1, "exactly one surviving node leads"
    finally:
        for n in nodes:
            n.stop()
    try:
        await _check_ledger(conn, epoch)
    finally:
        await conn.close()
    verified = run_cli(env, "verify")
    assert verified.returncode == 0, verified.stdout + verified.stderr
    rebuilt = run_cli(env, "rebuild")
    assert rebuilt.returncode == 0, rebuilt.stdout + rebuilt.stderr


async def _one_attempt(session: aiohttp.ClientSession, conn: asyncpg.Connection,
                       nodes: list[ServeProcess], rep: nacl.signing.SigningKey,
                       subjects: list[str], attempt: int) -> tuple[int, ServeProcess] | None:
    """Post a round of facts through every node, wait for their epoch's seal, kill the
    node that leads the report building while the epoch has no checkpoint yet. Returns
    (epoch, the node killed) when the kill landed mid-build, else None."""
    lines = [json.dumps(wire.sign_payload(rep, "fact", fact_payload(
        f"round{attempt}-{i}", subjects[i % len(subjects)]))).encode()
        for i in range(FACTS_PER_ROUND)]
    batches = [lines[i:i + 250] for i in range(0, len(lines), 250)]
    await asyncio.gather(*(_post(session, nodes[i % len(nodes)].url, b)
                           for i, b in enumerate(batches)))
    last = await conn.fetchval("SELECT max(seq) FROM entries WHERE kind = 'fact'")
    # The seal of the epoch holding the round's last fact, not yet built.
    epoch = await until("the round's epoch to be sealed", lambda: conn.fetchval(
        "SELECT epoch FROM seals WHERE last_seq >= $1 ORDER BY epoch LIMIT 1", last),
        timeout=DEADLINE)
    if await conn.fetchval("SELECT true FROM checkpoints WHERE epoch = $1", epoch):
        return None

    async def leader() -> ServeProcess | None:
        for n in nodes:
            if n.proc is not None and n.proc.poll() is None and await _leads_reports(n):
                return n
        return None

    victim = await until("a node to lead the report building", leader, timeout=DEADLINE)
    victim.kill()
    # Nothing of the victim's can commit any more: if the checkpoint is absent now, the
    # kill landed before the build was stored.
    built = await conn.fetchval("SELECT true FROM checkpoints WHERE epoch = $1", epoch)
    return None if built else (epoch, victim)


async def _check_ledger(conn: asyncpg.Connection, epoch: int) -> None:
    facts, distinct = await conn.fetchrow(
        "SELECT count(*), count(DISTINCT content_key) FROM entries WHERE kind = 'fact'")
    assert facts == distinct, "no fact entry twice"
    seals = await conn.fetch("SELECT body->>'epoch' AS epoch, count(*) AS n FROM"
                             " (SELECT convert_from(entry, 'UTF8')::jsonb->'body' AS body"
                             "  FROM entries WHERE kind = 'seal') s GROUP BY 1")
    assert seals and all(r["n"] == 1 for r in seals), "one seal entry per epoch"
    reports, agents = await conn.fetchrow(
        "SELECT count(*), count(DISTINCT agent) FROM reports WHERE epoch = $1", epoch)
    assert reports == agents >= AGENTS, "one report per agent, signed once"
    assert await conn.fetchval("SELECT count(*) FROM checkpoints WHERE epoch = $1",
                               epoch) == 1
