"""The node's one sequencer (bureau.intake.sequencer) in a real ``serve --workers 2``:
groups grow with concurrent single POSTs, and kill -9 of a worker, of the sequencer or
of the whole serve loses nothing acknowledged and duplicates nothing."""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import signal
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import nacl.signing
import pytest

from reporters import wire
from tests.ledger.test_processes import (
    _chain_facts,
    _facts,
    _register,
    assert_all_acknowledged,
)
from tests.processes import ProgressKiller, ServeProcess, bureau_env

pytestmark = pytest.mark.slow


def _children(pid: int) -> list[int]:
    """The processes ``pid`` started, from /proc (every thread's children)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        with open(task / "children") as fh:
            found.extend(int(c) for c in fh.read().split())
    return found


def _is_sequencer(pid: int) -> bool:
    try:
        return b"--sequence" in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except FileNotFoundError:
        return False


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state == "Z"


async def _wait_gone(pids: list[int], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not all(_gone(p) for p in pids):
        assert time.monotonic() < deadline, f"still running: {pids}"
        await asyncio.sleep(0.02)


async def _sequencer_pid(server: ServeProcess, timeout: float = 30) -> int:
    assert server.proc is not None
    deadline = time.monotonic() + timeout
    while True:
        found = [p for p in _children(server.proc.pid) if _is_sequencer(p) and not _gone(p)]
        if found:
            return found[0]
        assert time.monotonic() < deadline, "no sequencer process"
        await asyncio.sleep(0.05)


def _metric(text: str, name: str) -> float:
    total = 0.0
    for line in text.splitlines():
        m = re.fullmatch(rf"{re.escape(name)}(?:\{{[^}}]*\}})? (\S+)", line)
        if m:
            total += float(m.group(1))
    return total


async def _post(session: aiohttp.ClientSession, url: str, raw: bytes) -> dict[str, Any]:
    async with session.post(url + "/v1/evidence", data=raw,
                            headers={"Content-Type": "application/json"},
                            timeout=aiohttp.ClientTimeout(total=30)) as resp:
        if resp.status not in (200, 201):
            raise ConnectionError(f"status {resp.status}: {await resp.text()}")
        body: dict[str, Any] = await resp.json()
        return body


@asynccontextmanager
async def _serving(database_url: str, tmp_path: Path
                   ) -> AsyncIterator[tuple[ServeProcess, nacl.signing.SigningKey]]:
    """A ``serve --workers 2`` with one registered reporter, whose key it yields."""
    admin, rep = wire.generate_key(), wire.generate_key()
    env = bureau_env(database_url, tmp_path, wire.signing_key_id(admin))
    server = ServeProcess(env, tmp_path / "serve.log", workers=2)
    await server.start()
    try:
        await _register(server.url, admin, rep)
        yield server, rep
    finally:
        server.stop()


async def _after_first_group(session: aiohttp.ClientSession, server: ServeProcess,
                             lines: list[bytes]) -> str:
    """Send ``lines`` one at a time until the sequencer has committed a group (so that
    none of a test's load is committed by a worker while the sequencer starts); the
    metrics then."""
    while True:
        async with session.get(server.ops_url + "/metrics") as resp:
            text = await resp.text()
        if _metric(text, "bureau_sequencer_group_envelopes_count") >= 1:
            return text
        assert (await _post(session, server.url, lines.pop()))["status"] == "accepted"


async def test_groups_grow_under_concurrent_single_posts(database_url: str,
                                                         tmp_path: Path) -> None:
    async with _serving(database_url, tmp_path) as (server, rep):
        lines = _facts(rep, 800, "grow")
        async with aiohttp.ClientSession() as session:
            async def client(part: list[bytes]) -> None:
                for raw in part:
                    assert (await _post(session, server.url, raw))["status"] == "accepted"

            text = await _after_first_group(session, server, lines)
            before = (_metric(text, "bureau_sequencer_group_envelopes_sum"),
                      _metric(text, "bureau_sequencer_group_envelopes_count"))
            fallbacks = _metric(text, "bureau_sequencer_fallback_total")
            await asyncio.gather(*(client(lines[i::8]) for i in range(8)))
            async with session.get(server.ops_url + "/metrics") as resp:
                text = await resp.text()
    envelopes = _metric(text, "bureau_sequencer_group_envelopes_sum") - before[0]
    groups = _metric(text, "bureau_sequencer_group_envelopes_count") - before[1]
    assert _metric(text, "bureau_sequencer_fallback_total") == fallbacks, \
        "every request went through the sequencer"
    assert envelopes == len(lines)
    # One committer per process would give groups of about one envelope here; eight
    # clients in flight gather into groups of several (about eight on a quiet machine).
    assert envelopes / groups >= 2.5, f"{envelopes:.0f} envelopes in {groups:.0f} groups"
    seqs, facts, distinct = await _chain_facts(database_url)
    assert facts == distinct and seqs == list(range(1, len(seqs) + 1))


async def test_refused_envelopes_cross_the_socket_without_breaking_it(
        database_url: str, tmp_path: Path) -> None:
    """A signed envelope whose payload fails decode travels to the sequencer as a
    refusal (its refusal is kept there): it is answered with its own reason code, and
    the accepted envelopes in flight beside it on the same connection are not moved
    to the fallback (a refusal that could not cross the socket once closed it)."""
    async with _serving(database_url, tmp_path) as (server, rep):
        good = _facts(rep, 200, "mixed")
        bad = [json.dumps(wire.sign_payload(rep, "fact", {"interaction": f"bad-{i}"})).encode()
               for i in range(40)]
        async with aiohttp.ClientSession() as session:
            text = await _after_first_group(session, server, good)
            fallbacks = _metric(text, "bureau_sequencer_fallback_total")

            async def refused(raw: bytes) -> None:
                async with session.post(server.url + "/v1/evidence", data=raw,
                                        headers={"Content-Type": "application/json"}) as resp:
                    body = await resp.json()
                    assert resp.status == 422 and body["code"] == "SCHEMA", body

            async def accepted(raw: bytes) -> None:
                assert (await _post(session, server.url, raw))["status"] == "accepted"

            work = [accepted(raw) for raw in good] + [refused(raw) for raw in bad]
            random.Random(7).shuffle(work)
            for i in range(0, len(work), 8):  # eight in flight, refusals among them
                await asyncio.gather(*work[i:i + 8])
            async with session.get(server.ops_url + "/metrics") as resp:
                text = await resp.text()
    assert _metric(text, "bureau_sequencer_fallback_total") == fallbacks, \
        "a refusal broke the sequencer connection and sent requests to the fallback"
    seqs, facts, distinct = await _chain_facts(database_url)
    assert facts == distinct == 200 and seqs == list(range(1, len(seqs) + 1))


class _Target:
    """What the ProgressKiller strikes in a running ``serve --workers 2``: one worker,
    the sequencer, or the serve's first process (its workers and sequencer follow it)."""

    def __init__(self, server: ServeProcess, which: str) -> None:
        self.server = server
        self.which = which

    def kill(self) -> None:
        proc = self.server.proc
        assert proc is not None
        children = [p for p in _children(proc.pid) if not _gone(p)]
        if self.which == "serve":
            self.server.kill()
            self._wait = children
            return
        pick = [p for p in children if _is_sequencer(p) == (self.which == "sequencer")]
        assert pick, f"no {self.which} to kill among {children}"
        os.kill(pick[0], signal.SIGKILL)
        self._wait = pick[:1]

    async def start(self, timeout: float = 30) -> None:
        await _wait_gone(self._wait, timeout)
        if self.which == "serve":
            await self.server.start(timeout)
        elif self.which == "sequencer":
            await _sequencer_pid(self.server, timeout)  # the serve started another
        # a killed worker is not replaced: the other process takes the port's load


async def _crash_run(database_url: str, tmp_path: Path, which: str, kills: int) -> None:
    rnd = random.Random(f"sequencer-{which}")
    admin, rep = wire.generate_key(), wire.generate_key()
    env = bureau_env(database_url, tmp_path, wire.signing_key_id(admin))
    server = ServeProcess(env, tmp_path / "serve.log", workers=3 if which == "worker" else 2)
    await server.start()
    await _register(server.url, admin, rep)
    await _sequencer_pid(server)
    lines = _facts(rep, 1200, which)
    rounds = [lines[i:i + 8] for i in range(0, len(lines), 8)]
    acknowledged: dict[str, int] = {}
    killer = ProgressKiller(_Target(server, which), rnd.sample(range(5, len(rounds)), kills),
                            rnd, max_delay=0.3)

    async def send(session: aiohttp.ClientSession, raw: bytes) -> None:
        while True:
            try:
                r = await _post(session, server.url, raw)
            except (aiohttp.ClientError, ConnectionError, TimeoutError):
                await asyncio.sleep(0.05)
                continue  # no answer: send the very same envelope again
            assert r["status"] in ("accepted", "duplicate"), r
            assert acknowledged.setdefault(r["id"], r["seq"]) == r["seq"]
            return

    try:
        async with aiohttp.ClientSession() as session:
            for n, group in enumerate(rounds):  # eight single POSTs in flight at a time
                await asyncio.gather(*(send(session, raw) for raw in group))
                await killer.reached(n + 1)
            await killer.settled()
    finally:
        server.stop()
    assert killer.kills == kills
    await assert_all_acknowledged(database_url, env, acknowledged, len(lines))


async def test_kill_9_of_the_sequencer(database_url: str, tmp_path: Path) -> None:
    await _crash_run(database_url, tmp_path, "sequencer", kills=4)


async def test_kill_9_of_a_worker(database_url: str, tmp_path: Path) -> None:
    await _crash_run(database_url, tmp_path, "worker", kills=2)


async def test_kill_9_of_the_whole_serve(database_url: str, tmp_path: Path) -> None:
    await _crash_run(database_url, tmp_path, "serve", kills=3)
