"""The primary can die (docs/scaling.md "High availability", THREAT_MODEL.md "the
primary dies"): a pg_auto_failover formation on loopback (tests/scaling/autofailover.py
— a monitor, a primary and a synchronous secondary), a real ``bureau serve`` on the URL
``pg_autoctl show uri`` prints (both nodes, ``target_session_attrs=read-write``), and a
reporter streaming facts through its durable spool.

After a chosen number of acknowledged facts (never after a time) the primary is killed
with SIGKILL, PostgreSQL and its keeper at once; the monitor promotes the secondary and
the bureau reconnects by itself — its pool, its committer, its leaders and its report
workers, each saying so in its log. Then: every fact is in the new primary's ledger
exactly once, every probe the bureau acknowledged is there, every tree head a client
kept from before the failover is proven consistent with every one after (the client's
own proof checks, sizes and roots from the notes kept), reports are built again, the
old primary comes back as the secondary, and ``bureau verify`` passes.

It prints the time from the kill to the first envelope accepted (a client retrying
every 20 ms, :func:`~tests.scaling.autofailover.first_accepted`), and to the monitor's
promotion; ``bench/failover_bench.py`` measures it over several failovers.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import asyncpg
import nacl.signing
import pytest

import reporters
from reporters import wire
from reporters.tlog.checkpoint import VerifiedCheckpoint
from tests.processes import ProgressKiller, ServeProcess, bureau_env, run_cli
from tests.scaling.autofailover import (
    Formation,
    Node,
    Probed,
    Unavailable,
    find_tools,
    first_accepted,
    formation,
)
from tests.scaling.replication import wait_replayed
from tests.support import fact_payload, issued, kid, missing

pytestmark = [pytest.mark.slow, pytest.mark.thirdparty]

FACTS = 600
CHUNK = 50
KILL_AFTER = 200  # acknowledged facts
AGENTS = 20
#: bounds a hang only: everything below waits on progress or on the monitor's state
DEADLINE = 180.0


@pytest.fixture
def pg_formation() -> Iterator[Formation]:
    try:
        find_tools()
    except Unavailable as why:
        missing(str(why))
    with formation() as made:
        yield made


async def test_the_primary_dies_and_the_bureau_carries_on(pg_formation: Formation,
                                                          tmp_path: Path) -> None:
    f = pg_formation
    old, new = f.nodes
    await f.wait_primary(old, with_secondary=True)
    await assert_synchronous(old)
    url = f.uri()
    assert "target_session_attrs=read-write" in url
    assert old.address in url and new.address in url

    admin, rep = wire.generate_key(), wire.generate_key()
    env = bureau_env(url, tmp_path / "home", kid(admin), BUREAU_EPOCH_SECONDS="3",
                     BUREAU_SEAL_INTERVAL="0.5", BUREAU_CHECKPOINT_INTERVAL="1",
                     BUREAU_REPORT_WORKERS="2")
    serve = ServeProcess(env, tmp_path / "serve.log")
    await serve.start(timeout=60)
    try:
        outcome = await run_intake_through_failover(f, serve, admin, rep, tmp_path)
    finally:
        serve.stop()
    probed = outcome.probed
    print(f"\nfailover: kill -9 of the primary -> promoted in {outcome.promoted:.2f} s, "
          f"first envelope accepted {probed.seconds:.2f} s after the kill; "
          f"answers meanwhile: {dict(probed.answers)}")

    # While no node took writes, intake said so and nothing else: 503 with Retry-After.
    assert set(probed.answers) <= {(503, "UNAVAILABLE", True)}, probed.answers
    await assert_ledger(new.url(), rep, [probed.accepted])
    assert_consistent(outcome.heads)
    await assert_heads_kept(new.url(), outcome.heads.before)
    assert_said_so(serve.log.read_text(), new)

    # The old primary comes back as the secondary of the new one (docs/runbook.md),
    # holding the same ledger once it has replayed.
    f.run(old)
    await f.wait_primary(new, with_secondary=True)
    await wait_replayed(new.url(), old.url())
    heads = []
    for node in (new, old):
        conn = await asyncpg.connect(node.url())
        try:
            heads.append(tuple(await conn.fetchrow("SELECT seq, head FROM ledger_head")))
        finally:
            await conn.close()
    assert heads[0] == heads[1]
    verified = run_cli(env, "verify")
    assert verified.returncode == 0, verified.stdout + verified.stderr


# --------------------------------------------------------------------------- the run


@dataclass
class Heads:
    """The ``/checkpoint`` notes a client kept, verified against the key it pinned,
    before the kill and after the promotion."""

    vkey: str
    before: list[VerifiedCheckpoint] = field(default_factory=list)
    after: list[VerifiedCheckpoint] = field(default_factory=list)
    killed_at: float | None = None
    #: the consistency proof of each (before, after) pair of sizes, as served
    fetched: dict[tuple[int, int], dict[str, object]] = field(default_factory=dict)

    async def sample(self, session: aiohttp.ClientSession, url: str) -> None:
        async with session.get(url + "/checkpoint") as resp:
            assert resp.status == 200, await resp.text()
            note = await resp.text()
        head = reporters.verify_note(note, self.vkey)
        kept = self.before if self.killed_at is None else self.after
        if not kept or (kept[-1].size, kept[-1].root) != (head.size, head.root):
            kept.append(head)

    async def proofs_from(self, session: aiohttp.ClientSession, url: str) -> None:
        """Fetch the consistency proof of every (before, after) pair."""
        for a in self.before:
            for b in self.after:
                if a.size < b.size and (a.size, b.size) not in self.fetched:
                    async with session.get(url + "/v1/proofs/consistency", params={
                            "from": str(a.size), "to": str(b.size)}) as resp:
                        assert resp.status == 200, await resp.text()
                        self.fetched[(a.size, b.size)] = await resp.json()


class PrimaryFailover:
    """What the :class:`ProgressKiller` strikes: the formation's primary; the "restart"
    it waits for is the monitor promoting the secondary."""

    def __init__(self, f: Formation, old: Node, new: Node,
                 on_kill: Callable[[float], None]) -> None:
        self.f, self.old, self.new, self.on_kill = f, old, new, on_kill
        self.killed_at = 0.0
        self.promoted_at = 0.0

    def kill(self) -> None:
        self.killed_at = time.monotonic()
        self.f.kill(self.old)
        self.on_kill(self.killed_at)

    async def start(self, timeout: float = DEADLINE) -> None:
        await self.f.wait_primary(self.new, with_secondary=False, timeout=timeout)
        self.promoted_at = time.monotonic()


@dataclass
class Outcome:
    heads: Heads
    promoted: float  # seconds from the kill to the monitor's promotion
    probed: Probed


async def run_intake_through_failover(f: Formation, serve: ServeProcess,
                                      admin: nacl.signing.SigningKey,
                                      rep: nacl.signing.SigningKey,
                                      tmp_path: Path) -> Outcome:
    old, new = f.nodes
    subjects = [kid(wire.generate_key()) for _ in range(AGENTS)]
    async with aiohttp.ClientSession() as session:
        registration = wire.sign_payload(admin, "reporter", {
            "reporter": kid(rep), "name": "gw", "operator": "op", "roles": ["facts"],
            "issued_at": issued()})
        async with session.post(serve.url + "/v1/evidence", json=registration) as resp:
            assert resp.status == 201, await resp.text()
        async with session.get(serve.url + "/v1/bureau") as resp:
            heads = Heads((await resp.json())["vkey"])  # the key the client pins
        probing: list[asyncio.Task[Probed]] = []

        def on_kill(at: float) -> None:
            heads.killed_at = at
            probing.append(asyncio.get_running_loop().create_task(first_accepted(
                session, serve.url, lambda i: wire.sign_payload(
                    rep, "fact", fact_payload(f"probe-{i}", subjects[0])), at)))

        failover = PrimaryFailover(f, old, new, on_kill)
        killer = ProgressKiller(failover, [KILL_AFTER], random.Random(20),
                                restart_timeout=DEADLINE, log=print)
        async with reporters.Reporter(rep, serve.url, tmp_path / "spool", batch_size=CHUNK,
                                      backoff_base=0.05, max_backoff=0.5) as reporter:
            acked = 0
            for start in range(0, FACTS, CHUNK):
                for i in range(start, start + CHUNK):
                    await reporter.send(reporter.fact(f"fo-{i}", subjects[i % AGENTS],
                                                      latency_ms=i))
                await asyncio.wait_for(reporter.flush(), DEADLINE)
                acked += CHUNK
                if heads.killed_at is None or failover.promoted_at:
                    await heads.sample(session, serve.url)
                if acked == KILL_AFTER - CHUNK:
                    # the report workers have worked (and connected) before the kill
                    await until(lambda: has_checkpoint(old.url()), "a first checkpoint")
                await killer.reached(acked)
            await killer.settled()
            assert killer.kills == 1
            assert reporter.pending == 0 and reporter.rejections == []
        await heads.sample(session, serve.url)
        [probe] = probing
        probed = await asyncio.wait_for(probe, DEADLINE)
        # Reports are built again after the failover: the epoch of the last fact.
        last_epoch = await fetch(new.url(), "SELECT max(epoch) FROM entries WHERE kind = 'fact'")
        await until(lambda: has_checkpoint(new.url(), last_epoch), "the last epoch's reports")
        await heads.sample(session, serve.url)
        await heads.proofs_from(session, serve.url)
    return Outcome(heads, failover.promoted_at - failover.killed_at, probed)


# --------------------------------------------------------------------------- checks


async def assert_synchronous(primary: Node) -> None:
    """The primary waits for its secondary at every commit."""
    conn = await asyncpg.connect(primary.url())
    try:
        assert await conn.fetchval("SHOW synchronous_commit") == "on"
        assert await conn.fetchval("SHOW synchronous_standby_names") != ""
        states = await conn.fetch("SELECT sync_state FROM pg_stat_replication")
        assert [r["sync_state"] for r in states] in (["sync"], ["quorum"]), states
    finally:
        await conn.close()


async def assert_ledger(url: str, rep: nacl.signing.SigningKey, probes: list[str]) -> None:
    """Every fact the spool sent is in the new primary's ledger exactly once, every
    probe acknowledged is there, and the chain has no gap."""
    conn = await asyncpg.connect(url)
    try:
        interactions = [r["interaction"] for r in await conn.fetch(
            "SELECT interaction FROM facts WHERE reporter = $1 AND interaction LIKE 'fo-%'",
            kid(rep))]
        assert sorted(interactions) == sorted(f"fo-{i}" for i in range(FACTS))
        facts, distinct = await conn.fetchrow(
            "SELECT count(*), count(DISTINCT content_key) FROM entries WHERE kind = 'fact'")
        assert facts == distinct, "no fact twice"
        assert await conn.fetchval("SELECT count(*) FROM entries WHERE id = ANY($1)",
                                   probes) == len(probes)
        n, top, head = await conn.fetchrow(
            "SELECT count(*), max(seq), (SELECT seq FROM ledger_head) FROM entries")
        assert n == top == head, "contiguous seqs up to the head"
    finally:
        await conn.close()


def assert_consistent(heads: Heads) -> None:
    """Every head kept from before the kill is a prefix of every head after it,
    checked with the client's own proof code against the notes kept."""
    assert heads.before and heads.after
    assert heads.after[-1].size > heads.before[-1].size, "the log grew after the failover"
    for a in heads.before:
        for b in heads.after:
            assert b.size >= a.size, f"a head of {b.size} after one of {a.size}"
            if a.size == b.size:
                assert a.root == b.root
            else:
                reporters.verify_consistency(heads.fetched[(a.size, b.size)], a, b)


async def assert_heads_kept(url: str, before: list[VerifiedCheckpoint]) -> None:
    """The new primary holds every head published before the failover (synchronous
    replication: a head served was on the secondary before it was served)."""
    conn = await asyncpg.connect(url)
    try:
        kept = {(r["size"], bytes(r["root"])) for r in await conn.fetch(
            "SELECT size, root FROM tree_heads")}
    finally:
        await conn.close()
    assert {(h.size, h.root) for h in before} <= kept


def assert_said_so(log: str, new: Node) -> None:
    """Each way the bureau reaches the database reconnected by itself, to the new
    primary, and said so; the leaders were elected again; no traceback. (A report
    worker idle at the kill reconnects; one working at the kill fails its epoch, and
    the settler starts new workers, which connect to the new primary.)"""
    for link in ("database pool", "committer"):
        assert f"{link}: reconnected, to the database at {new.address}" in log, link
    for worker in ("report worker 0", "report worker 1"):
        assert (f"{worker}: reconnected, to the database at {new.address}" in log
                or f"{worker}: connected to the database at {new.address}" in log), worker
    assert log.count("this process publishes tree heads") >= 2
    assert log.count("this process builds the reports") >= 2
    assert "Traceback" not in log, log[max(0, log.index("Traceback") - 2000):][:5000]


# --------------------------------------------------------------------------- helpers


async def fetch(url: str, sql: str, *args: object) -> object:
    conn = await asyncpg.connect(url)
    try:
        return await conn.fetchval(sql, *args)
    finally:
        await conn.close()


async def has_checkpoint(url: str, epoch: object = None) -> bool:
    return bool(await fetch(url, "SELECT EXISTS (SELECT 1 FROM checkpoints WHERE"
                            " $1::bigint IS NULL OR epoch >= $1)", epoch))


async def until(check: Callable[[], object], what: str) -> None:
    """Until ``check()`` (awaited) is true; ``DEADLINE`` bounds a hang only."""
    deadline = time.monotonic() + DEADLINE
    while not await check():  # type: ignore[misc]
        if time.monotonic() > deadline:
            raise TimeoutError(f"waited {DEADLINE:g} s for {what}")
        await asyncio.sleep(0.05)
