"""The proxy as a real process: kill -9 at points chosen by progress loses no fact and
sends none twice; a restart carries held threads on; SIGTERM and SIGINT stop it cleanly."""

from __future__ import annotations

import asyncio
import collections
import os
import random
import re
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import aiohttp
import nacl.signing
import pytest
from aiohttp import web

import reporters
from reporters.httpsig import sign_request_headers
from reporters.proxy import INTERACTION_HEADER
from tests.client.helpers import DEAD_URL
from tests.proxy.process import ProxyProcess
from tests.proxy.support import ledger_facts, metric, new_agent, upstream
from tests.support import BureauUnderTest, fresh_database, registration, start_bureau

pytestmark = pytest.mark.slow


async def wait_for_facts(database_url: str, reporter: str, wanted: set[str],
                         timeout: float = 60) -> list[dict[str, Any]]:
    """Poll the ledger until every interaction in ``wanted`` has its fact."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        facts = await ledger_facts(database_url, reporter)
        missing = wanted - {f["interaction"] for f in facts}
        if not missing:
            return facts
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"{len(missing)} facts never reached the ledger: "
                                 f"{sorted(missing)[:10]}")
        await asyncio.sleep(0.1)


async def gateway(bureau: BureauUnderTest, tmp_path: Path,
                  ) -> tuple[nacl.signing.SigningKey, Path]:
    key = await bureau.reporter(("facts",))
    key_file = tmp_path / "gateway.key"
    reporters.save_key(key, key_file)
    return key, key_file


def proxy_args(key_file: Path, bureau_url: str, spool: Path, up: str,
               agents: tuple[str, str]) -> tuple[str, ...]:
    return ("--key", str(key_file), "--bureau", bureau_url, "--spool", str(spool),
            "--proxy-id", "px-proc", "--route", f"/a={agents[0]}@{up}",
            "--route", f"/b={agents[1]}@{up}")


async def fine(request: web.Request) -> web.Response:
    return web.json_response({"answer": 1})


async def unsigned_calls(session: aiohttp.ClientSession, base: str, n: int) -> set[str]:
    """``n`` unsigned calls (their facts are released at once); their interaction ids."""
    ids = set()
    for i in range(n):
        async with session.get(f"{base}/{i}") as resp:
            ids.add(resp.headers[INTERACTION_HEADER])
    return ids


async def test_kill_9_at_random_points_loses_no_fact_and_sends_none_twice(
        bureau: BureauUnderTest, tmp_path: Path) -> None:
    seed = int(os.environ.get("BUREAU_TEST_SEED", random.randrange(2**32)))
    rng = random.Random(seed)
    print(f"seed {seed} (BUREAU_TEST_SEED={seed} repeats this run)")
    served = 0

    async def sometimes_failing(request: web.Request) -> web.Response:
        nonlocal served
        served += 1
        if served % 3 == 0:  # unsatisfactory answers make retries, switches, abandonment
            return web.json_response({"error": "busy"}, status=503)
        return web.json_response({"answer": len(await request.read())})

    key, key_file = await gateway(bureau, tmp_path)
    callers: list[nacl.signing.SigningKey | None] = [reporters.generate_key() for _ in range(4)]
    callers.append(None)  # and unsigned calls, released at once
    acknowledged: set[str] = set()
    recovered = 0.0
    async with upstream(sometimes_failing) as up, aiohttp.ClientSession() as session:
        px = ProxyProcess(tmp_path / "proxy.log", *proxy_args(
            key_file, bureau.url, tmp_path / "spool", up, (new_agent(), new_agent())),
            "--settle-seconds", "0.3", "--quiet-seconds", "0.6")

        async def drive(kill_after: int) -> None:
            """Concurrent callers; SIGKILL as soon as ``kill_after`` answers are back,
            with other calls in flight and facts being held, spooled and delivered."""
            answered = 0
            killed = asyncio.Event()

            async def caller_loop() -> None:
                nonlocal answered
                while not killed.is_set():
                    signer = rng.choice(callers)
                    url = f"{px.url}{rng.choice(['/a', '/b'])}/task-{rng.randrange(5)}"
                    headers = sign_request_headers(signer, "POST", url) if signer else {}
                    try:
                        async with session.post(url, data=url[-6:], headers=headers) as resp:
                            interaction = resp.headers[INTERACTION_HEADER]
                            await resp.read()
                    except aiohttp.ClientError:
                        return  # the proxy is gone
                    # The answer carries the interaction id: from here on its fact
                    # must reach the ledger, exactly once.
                    acknowledged.add(interaction)
                    answered += 1
                    if answered >= kill_after and not killed.is_set():
                        px.kill()
                        killed.set()

            await asyncio.gather(*(caller_loop() for _ in range(6)))

        for _ in range(3):
            await px.start()
            recovered += await metric(session, px.ops_url, "bureau_proxy_facts_recovered_total")
            await drive(rng.randint(1, 60))
            assert await px.wait() == -signal.SIGKILL
        await px.start()  # the last run: it delivers whatever the others left
        recovered += await metric(session, px.ops_url, "bureau_proxy_facts_recovered_total")
        facts = await wait_for_facts(bureau.database_url, reporters.key_id(key), acknowledged)
        assert await px.stop(signal.SIGTERM) == 0
    counts = collections.Counter(f["interaction"] for f in facts)
    assert [i for i, n in counts.items() if n > 1] == [], f"seed {seed}"
    assert acknowledged <= set(counts), f"seed {seed}"
    assert recovered > 0, f"seed {seed}: no kill left a held fact; the test proved nothing"


async def test_a_restart_carries_held_threads_on(bureau: BureauUnderTest,
                                                 tmp_path: Path) -> None:
    """Killed while every fact waits for its window, the next run settles them as the
    first would have: the retry kept, the caller gone, the caller who came back."""
    attempts: collections.Counter[str] = collections.Counter()

    async def first_attempt_fails(request: web.Request) -> web.Response:
        attempts[request.path] += 1
        if request.path != "/fine" and attempts[request.path] == 1:
            return web.json_response({"error": "busy"}, status=503)
        return web.json_response({"answer": 1})

    key, key_file = await gateway(bureau, tmp_path)
    retrier, leaver, returner = (reporters.generate_key() for _ in range(3))
    async with upstream(first_attempt_fails) as up, aiohttp.ClientSession() as session:
        px = ProxyProcess(tmp_path / "proxy.log", *proxy_args(
            key_file, bureau.url, tmp_path / "spool", up, (new_agent(), new_agent())))

        async def call(signer: nacl.signing.SigningKey, path: str) -> str:
            url = px.url + path
            async with session.post(url, data=b"{}",
                                    headers=sign_request_headers(signer, "POST", url)) as resp:
                return resp.headers[INTERACTION_HEADER]

        await px.start("--settle-seconds", "60", "--quiet-seconds", "120")
        ids = {"retried": await call(retrier, "/a/job"), "kept": await call(retrier, "/a/job"),
               "left": await call(leaver, "/a/other"),
               "came_back": await call(returner, "/a/third"),
               "other_business": await call(returner, "/a/fine")}
        px.kill()
        await px.wait()
        with sqlite3.connect(tmp_path / "spool" / "spool.sqlite3") as db:
            held = {name for (name,) in db.execute("SELECT name FROM held")}
        # The retry was settled at once and may have reached the spool before the kill.
        assert held >= set(ids.values()) - {ids["kept"]}

        await px.start("--settle-seconds", "0.3", "--quiet-seconds", "0.8")
        assert await metric(session, px.ops_url, "bureau_proxy_facts_recovered_total") == len(
            held)
        facts = await wait_for_facts(bureau.database_url, reporters.key_id(key),
                                     set(ids.values()))
        assert await px.stop() == 0
    derived = {f["interaction"]: f["derived"] for f in facts}
    assert {name: derived[i] for name, i in ids.items()} == {
        "retried": "RETRY_ACCEPTED", "kept": None, "left": "ABANDONED", "came_back": None,
        "other_business": None}
    assert len(facts) == len(ids)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
async def test_a_signal_stops_it_cleanly(bureau: BureauUnderTest, tmp_path: Path,
                                         sig: signal.Signals) -> None:
    key, key_file = await gateway(bureau, tmp_path)
    caller = reporters.generate_key()
    async with upstream(fine) as up, aiohttp.ClientSession() as session:
        px = ProxyProcess(tmp_path / "proxy.log", *proxy_args(
            key_file, bureau.url, tmp_path / "spool", up, (new_agent(), new_agent())),
            "--settle-seconds", "60", "--quiet-seconds", "60")
        await px.start()
        ids = set()
        for n in range(4):  # signed: held for the window; unsigned: delivered at once
            url = f"{px.url}/a/{n}"
            headers = sign_request_headers(caller, "GET", url) if n % 2 else {}
            async with session.get(url, headers=headers) as resp:
                ids.add(resp.headers[INTERACTION_HEADER])
        assert await px.stop(sig) == 0
    facts = await ledger_facts(bureau.database_url, reporters.key_id(key))
    assert {f["interaction"] for f in facts} == ids  # the held ones were released and sent
    log = px.logged()
    assert f"{sig.name}: stopping" in log
    # One line per delivered batch; how the four facts fell into batches depends on
    # timing (the unsigned ones go at once, the held ones at the stop), the sum does not.
    batches = re.findall(r"delivered (\d+) facts?: (\d+) accepted, 0 duplicate, 0 rejected",
                         log)
    assert batches and sum(int(accepted) for _, accepted in batches) == 4, log
    assert ("stopped: 4 calls forwarded, 4 facts delivered (4 accepted, 0 duplicate, "
            "0 rejected); nothing left behind") in log


async def test_a_stop_with_the_bureau_away_keeps_the_facts_on_disk(
        bureau: BureauUnderTest, tmp_path: Path) -> None:
    key, key_file = await gateway(bureau, tmp_path)
    spool = tmp_path / "spool"
    agents = (new_agent(), new_agent())
    async with upstream(fine) as up, aiohttp.ClientSession() as session:
        away = ProxyProcess(tmp_path / "away.log", *proxy_args(key_file, DEAD_URL, spool, up,
                                                                agents),
                            "--drain-seconds", "2")
        await away.start()
        ids = await unsigned_calls(session, away.url + "/b", 3)
        assert await away.stop() == 0  # within the bound, though nothing was delivered
        assert (f"0 facts delivered (0 accepted, 0 duplicate, 0 rejected); 3 facts wait in "
                f"the spool and 0 are held in {spool / 'spool.sqlite3'}") in away.logged()

        back = ProxyProcess(tmp_path / "back.log", *proxy_args(key_file, bureau.url, spool, up,
                                                                agents))
        await back.start()
        facts = await wait_for_facts(bureau.database_url, reporters.key_id(key), ids)
        assert await back.stop() == 0
    assert sorted(f["interaction"] for f in facts) == sorted(ids)


@pytest.mark.slow
async def test_kept_facts_are_sent_again_after_a_restore(
        bureau: BureauUnderTest, pg_server_url: str, tmp_path: Path) -> None:
    """``--keep-delivered-days`` keeps what was delivered; ``bureau-reporter resend``
    sends it to a bureau restored without it (docs/runbook.md)."""
    key, key_file = await gateway(bureau, tmp_path)
    spool = tmp_path / "spool"
    async with upstream(fine) as up, aiohttp.ClientSession() as session:
        px = ProxyProcess(tmp_path / "proxy.log", *proxy_args(
            key_file, bureau.url, spool, up, (new_agent(), new_agent())),
            "--keep-delivered-days", "7")
        await px.start()
        ids = await unsigned_calls(session, px.url + "/a", 3)
        await wait_for_facts(bureau.database_url, reporters.key_id(key), ids)
        assert await px.stop() == 0

    async def resend(url: str, *more: str) -> subprocess.CompletedProcess[str]:
        return await asyncio.to_thread(subprocess.run, [
            sys.executable, "-m", "reporters.proxy.cli", "resend", "--key", str(key_file),
            "--bureau", url, "--spool", str(spool), "--timeout", "60", *more],
            capture_output=True, text=True, timeout=120)

    async with fresh_database(pg_server_url) as url, \
            start_bureau(url, tmp_path / "restored") as restored:
        await restored.accepted(restored.admin, "reporter", registration(reporters.key_id(key)))
        done = await resend(restored.url)
        assert done.returncode == 0, done.stderr
        assert "3 facts sent again: 3 accepted" in done.stdout
        facts = await ledger_facts(url, reporters.key_id(key))
        assert {f["interaction"] for f in facts} == ids
    again = await resend(bureau.url, "--since", "2000-01-01T00:00:00Z")
    assert again.returncode == 0, again.stderr
    assert "3 facts sent again: 0 accepted (the bureau had lost them), 3 duplicate" in again.stdout
    assert len(await ledger_facts(bureau.database_url, reporters.key_id(key))) == 3
    bad = await resend(bureau.url, "--since", "yesterday")
    assert bad.returncode == 2 and "--since" in bad.stderr
