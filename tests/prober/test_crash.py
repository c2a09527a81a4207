"""The prober as a real process: kill -9 while a task is in flight, at points chosen by
progress, loses no probe the spool accepted and reports none twice; SIGTERM stops it
cleanly; ``--limit`` stops it by itself."""

from __future__ import annotations

import asyncio
import base64
import collections
import json
import os
import random
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
from tests.prober.process import ProberProcess
from tests.prober.support import TEMPLATE, entries, question, refusals
from tests.probing.solver import solve
from tests.proxy.support import metric
from tests.support import BureauUnderTest, kid, serving

pytestmark = pytest.mark.slow


def write_config(tmp: Path, bureau_url: str, key_file: Path,
                 routes: list[dict[str, Any]]) -> Path:
    path = tmp / "probe.json"
    path.write_text(json.dumps({
        "bureau_url": bureau_url, "key_file": str(key_file), "spool_dir": str(tmp / "spool"),
        "prober_id": "pb-crash", "drain_seconds": 30, "routes": routes}))
    return path


def spooled_probes(spool: Path) -> set[str]:
    """The interactions of the probes waiting in the spool (accepted by it, not yet
    answered for by the bureau)."""
    with sqlite3.connect(spool / "spool.sqlite3") as db:
        lines = [bytes(line) for (line,) in db.execute("SELECT line FROM spool")]
    out = set()
    for line in lines:
        envelope = json.loads(line)
        if envelope["payloadType"] == "application/vnd.bureau.probe.v1+json":
            out.add(json.loads(base64.b64decode(envelope["payload"]))["interaction"])
    return out


async def test_kill_9_during_a_batch_loses_no_probe_and_reports_none_twice(
        bureau: BureauUnderTest, tmp_path: Path) -> None:
    seed = int(os.environ.get("BUREAU_TEST_SEED", random.randrange(2**32)))
    rng = random.Random(seed)
    print(f"seed {seed} (BUREAU_TEST_SEED={seed} repeats this run)")
    key = await bureau.reporter(("facts", "probes"))
    key_file = tmp_path / "prober.key"
    reporters.save_key(key, key_file)
    received: dict[str, list[str]] = collections.defaultdict(list)
    state: dict[str, Any] = {"kill_at": 0, "count": 0, "px": None}

    def agent_app(name: str, answer: Any) -> web.Application:
        async def handle(request: web.Request) -> web.Response:
            text = await question(request)
            received[name].append(text)
            state["count"] += 1
            px: ProberProcess | None = state["px"]
            if px is not None and px.proc is not None and state["count"] == state["kill_at"]:
                # The prober is waiting for this answer: kill it now, task in flight.
                px.kill()
                await px.proc.wait()
            return web.json_response(answer(text))

        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", handle)
        return app

    agents = {n: reporters.generate_key() for n in ("right", "wrong", "declining")}
    answers = {"right": lambda t: {"status": "ok", "answer": solve(t)},
               "wrong": lambda t: {"status": "ok", "answer": solve(t) + "1"},
               "declining": lambda t: {"status": "declined"}}
    async with (serving(agent_app("right", answers["right"])) as u1,
                serving(agent_app("wrong", answers["wrong"])) as u2,
                serving(agent_app("declining", answers["declining"])) as u3,
                aiohttp.ClientSession() as session):
        urls = {"right": u1, "wrong": u2, "declining": u3}
        # Kinds with so many tasks that no two texts come out alike by chance: an
        # agent asked the same text twice was asked the same task twice.
        routes = [{"agent": kid(agents[n]), "upstream": urls[n], "probes_per_hour": 360000,
                   "kinds": ["arithmetic", "parsing"], **TEMPLATE} for n in agents]
        px = ProberProcess(tmp_path / "probe.log",
                           write_config(tmp_path, bureau.url, key_file, routes))
        state["px"] = px
        accepted: set[str] = set()
        interrupted = 0.0
        for _ in range(3):
            state["kill_at"] = state["count"] + rng.randint(1, 40)
            await px.start()
            interrupted += await metric(session, px.ops_url, "bureau_probe_interrupted_total")
            assert await px.wait() == -signal.SIGKILL
            # what the spool had accepted, and what it had delivered already
            accepted |= spooled_probes(tmp_path / "spool")
            accepted |= {p["interaction"] for p in
                         await entries(bureau.database_url, kid(key), "probe")}
        state["kill_at"] = 0
        await px.start("--limit", "3")  # the last run: three tasks a route, then it stops
        interrupted += await metric(session, px.ops_url, "bureau_probe_interrupted_total")
        assert await px.wait() == 0, px.logged()[-3000:]
    assert "stopped: 9 tasks sent" in px.logged()
    probes = await entries(bureau.database_url, kid(key), "probe")
    facts = await entries(bureau.database_url, kid(key), "fact")
    interactions = collections.Counter(p["interaction"] for p in probes)
    assert [i for i, n in interactions.items() if n > 1] == [], f"seed {seed}"
    assert accepted <= set(interactions), f"seed {seed}: {accepted - set(interactions)}"
    for agent in agents.values():  # no task reported twice, in one interaction or two
        ids = [p["probe"] for p in probes if p["subject"] == kid(agent)]
        assert len(ids) == len(set(ids)), f"seed {seed}"
    for name, texts in received.items():  # and none asked twice
        assert len(texts) == len(set(texts)), f"seed {seed}: {name}"
    assert {p["interaction"] for p in probes} <= {f["interaction"] for f in facts}
    assert not {p["subject"] for p in probes} & {kid(agents["declining"])}
    assert await refusals(bureau.database_url, kid(key)) == []
    assert interrupted >= 3, f"seed {seed}: no kill left a task in flight"


@pytest.mark.slow
async def test_sigterm_stops_it_cleanly_and_limit_stops_it_by_itself(
        bureau: BureauUnderTest, tmp_path: Path) -> None:
    key: nacl.signing.SigningKey = await bureau.reporter(("facts", "probes"))
    key_file = tmp_path / "prober.key"
    reporters.save_key(key, key_file)
    answered = asyncio.Event()

    async def handle(request: web.Request) -> web.Response:
        text = await question(request)
        answered.set()
        return web.json_response({"status": "ok", "answer": solve(text)})

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    agent = reporters.generate_key()
    async with serving(app) as url:
        config = write_config(tmp_path, bureau.url, key_file, [
            {"agent": kid(agent), "upstream": url, "probes_per_hour": 3600, **TEMPLATE}])
        px = ProberProcess(tmp_path / "probe.log", config)
        await px.start()
        await answered.wait()
        second = await asyncio.to_thread(subprocess.run, [
            sys.executable, "-m", "reporters.proxy.cli", "probe", "--config", str(config),
            "--ops-listen", "off"], capture_output=True, text=True, timeout=120)
        assert second.returncode == 2 and "another Reporter holds the spool" in second.stderr
        assert await px.stop(signal.SIGTERM) == 0
    log = px.logged()
    assert "SIGTERM: stopping" in log
    assert "nothing left behind" in log, log[-2000:]
    probes = await entries(bureau.database_url, kid(key), "probe")
    assert probes and all(p["passed"] for p in probes)
    audit = [json.loads(line) for line in
             (tmp_path / "spool" / "audit.jsonl").read_text().splitlines()]
    assert [a["interaction"] for a in audit] == [p["interaction"] for p in probes]
    assert all(a["result"] == "passed" and a["task"] and a["reply"] for a in audit)
