"""The prober against A2A agents built with a2a-sdk's server on loopback: it calls them
with a2a-sdk's client (``message/send`` for an A2A 0.3 card, ``SendMessage`` for 1.0),
reads the task's final state and its artifacts, and reports what SPEC §4 (r3) says each
state means; ``rejected`` is a decline, never a failed probe."""

from __future__ import annotations

import collections
from pathlib import Path

import pytest

from tests.client.helpers import DEAD_URL
from tests.prober.a2a_agents import BEHAVIOURS, a2a_agents
from tests.prober.support import entries, new_agent, prober, refusals, reports, run
from tests.support import BureauUnderTest, kid


@pytest.mark.parametrize("version", ["1.0", "0.3"])
async def test_every_final_state(bureau: BureauUnderTest, tmp_path: Path, version: str) -> None:
    agents = {b: new_agent() for b in BEHAVIOURS}
    reporter = await bureau.reporter(("facts", "probes"))
    async with a2a_agents(version) as (base, executors, methods):
        routes = [{"agent": kid(agents[b]), "protocol": "a2a", "upstream": f"{base}/{b}",
                   "probes_per_hour": 360000, "timeout_seconds": 2 if b == "stalls" else 30}
                  for b in BEHAVIOURS]
        async with prober(bureau, tmp_path, routes, limit=3, reporter=reporter) as p:
            await run(p)
        assert executors["stalls"].cancelled == 3  # the prober left each, and said so
        sent = "message/send" if version == "0.3" else "SendMessage"
        assert methods.methods["/right"] == [sent] * 3
        assert set(methods.methods["/stalls"]) >= {sent}
    me = kid(reporter)
    facts = await entries(bureau.database_url, me, "fact")
    probes = await entries(bureau.database_url, me, "probe")
    name = {kid(k): b for b, k in agents.items()}
    seen = collections.defaultdict(set)
    for f in facts:
        seen[name[f["subject"]]].add((f["answered"], f["well_formed"], f["claimed"],
                                      f["derived"]))
    assert seen == {
        "right": {(True, True, "SUCCESS", None)},
        "wrong": {(True, True, "SUCCESS", None)},
        "rejects": {(True, True, "DECLINED", None)},
        "fails": {(True, True, "FAILURE", None)},
        "asks": {(True, True, None, "ABANDONED")},
        "messages": {(True, True, None, None)},
        "stalls": {(True, True, None, "ABANDONED")},
    }
    passed = collections.defaultdict(list)
    for pr in probes:
        passed[name[pr["subject"]]].append(pr["passed"])
    assert passed == {"right": [True] * 3, "messages": [True] * 3, "wrong": [False] * 3,
                      "fails": [False] * 3}
    assert await refusals(bureau.database_url, me) == []

    got = await reports(bureau, {b: kid(k) for b, k in agents.items()})
    assert got["rejects"]["probes"] == {"passed": 0, "failed": 0}
    assert got["rejects"]["unscored"]["DECLINED"] == 3 and got["rejects"]["score"] is None
    assert got["fails"]["outcomes"]["FAILED_ADMITTED"] == 3
    assert got["wrong"]["outcomes"]["FAILED_DISCOVERED"] == 3
    assert got["asks"]["outcomes"]["ABANDONED"] == 3
    assert got["right"]["probes"] == {"passed": 3, "failed": 0}


async def test_an_agent_the_client_cannot_call_is_reported_nowhere(
        bureau: BureauUnderTest, tmp_path: Path) -> None:
    """A card offering no interface a2a-sdk's client speaks is a setup problem, not an
    answer: logged, counted as interrupted, nothing reported; the prober goes on."""
    reporter = await bureau.reporter(("facts", "probes"))
    async with a2a_agents("1.0") as (base, _, _):
        routes = [{"agent": kid(new_agent()), "protocol": "a2a",
                   "upstream": f"{base}/grpc-only", "probes_per_hour": 360000},
                  {"agent": kid(new_agent()), "protocol": "a2a", "upstream": f"{base}/right",
                   "probes_per_hour": 360000}]
        async with prober(bureau, tmp_path, routes, limit=2, reporter=reporter) as p:
            await run(p)
            assert p.metrics.interrupted._value.get() == 2
            assert p.run.results["passed"] == 2
    facts = await entries(bureau.database_url, kid(reporter), "fact")
    assert {f["subject"] for f in facts} == {routes[1]["agent"]}


async def test_an_agent_that_is_not_there_did_not_answer(bureau: BureauUnderTest,
                                                         tmp_path: Path) -> None:
    agent = new_agent()
    reporter = await bureau.reporter(("facts", "probes"))
    routes = [{"agent": kid(agent), "protocol": "a2a", "upstream": DEAD_URL,
               "probes_per_hour": 360000, "timeout_seconds": 5}]
    async with prober(bureau, tmp_path, routes, limit=2, reporter=reporter) as p:
        await run(p)
        assert p.run.results["no_answer"] == 2
    facts = await entries(bureau.database_url, kid(reporter), "fact")
    assert [f["answered"] for f in facts] == [False, False]
    assert await entries(bureau.database_url, kid(reporter), "probe") == []
