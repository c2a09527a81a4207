"""kill -9 of the proxy during A2A traffic (a2a-sdk's agent and client; tasks that
complete, fail, stream, wait for input and are continued, are polled and cancelled): no
fact lost whose interaction a caller was given, none entered twice."""

from __future__ import annotations

import asyncio
import collections
import os
import random
import signal
from pathlib import Path

import aiohttp
import httpx
import pytest
from a2a.client import A2AClientError

import reporters
from tests.protocols.a2a_agent import Caller, a2a_agent
from tests.proxy.process import ProxyProcess
from tests.proxy.support import metric
from tests.proxy.test_crash import gateway, wait_for_facts
from tests.support import BureauUnderTest

pytestmark = pytest.mark.slow


async def test_kill_9_during_a2a_traffic_loses_no_fact_and_sends_none_twice(
        bureau: BureauUnderTest, tmp_path: Path) -> None:
    seed = int(os.environ.get("BUREAU_TEST_SEED", random.randrange(2**32)))
    rng = random.Random(seed)
    print(f"seed {seed} (BUREAU_TEST_SEED={seed} repeats this run)")
    key, key_file = await gateway(bureau, tmp_path)
    agent = reporters.key_id(reporters.generate_key())
    given: set[str] = set()  # every interaction id a caller was given
    recovered = 0.0
    async with a2a_agent("1.0") as base:
        px = ProxyProcess(tmp_path / "proxy.log", "--key", str(key_file), "--bureau",
                          bureau.url, "--spool", str(tmp_path / "spool"), "--proxy-id",
                          "px-a2a", "--route", f"/helper={agent}@{base}",
                          "--settle-seconds", "0.3", "--quiet-seconds", "0.6")
        signers = [reporters.generate_key(), None]

        async def drive(kill_after: int) -> None:
            killed = asyncio.Event()

            async def caller_loop(n: int) -> None:
                caller = Caller(px.url + "/helper", signers[n % 2])
                try:
                    while not killed.is_set():
                        kind = rng.choice(["complete", "fail", "stream", "ask", "work"])
                        if kind == "stream":
                            await caller.send("complete", streaming=True)
                        elif kind == "ask":
                            asked = await caller.send("ask")
                            await caller.send("celsius", task=asked.task)
                        elif kind == "work":
                            working = await caller.send("work")
                            await caller.get(working.task)
                            await caller.cancel(working.task)
                        else:
                            await caller.send(kind)
                        given.update(caller.interactions)
                        if len(given) >= kill_after and not killed.is_set():
                            px.kill()
                            killed.set()
                except (A2AClientError, httpx.HTTPError):
                    pass  # the proxy is gone
                finally:
                    given.update(caller.interactions)
                    await caller.close()

            await asyncio.gather(*(caller_loop(n) for n in range(4)))

        async with aiohttp.ClientSession() as session:
            for _ in range(3):
                await px.start()
                recovered += await metric(session, px.ops_url,
                                          "bureau_proxy_facts_recovered_total")
                await drive(len(given) + rng.randint(1, 25))
                assert await px.wait() == -signal.SIGKILL
            await px.start()  # the last run delivers what the others left
            recovered += await metric(session, px.ops_url,
                                          "bureau_proxy_facts_recovered_total")
            facts = await wait_for_facts(bureau.database_url, reporters.key_id(key), given)
            assert await px.stop(signal.SIGTERM) == 0
    counts = collections.Counter(f["interaction"] for f in facts)
    assert [i for i, n in counts.items() if n > 1] == [], f"seed {seed}"
    assert given <= set(counts), f"seed {seed}"
    assert recovered > 0, f"seed {seed}: no kill left a held fact; the test proved nothing"
    assert {f["claimed"] for f in facts} >= {"SUCCESS", "FAILURE"}, f"seed {seed}"

