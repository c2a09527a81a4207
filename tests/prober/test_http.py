"""The prober against plain HTTP agents on loopback and a real bureau: a right answer is
a passed probe, a wrong one a failed probe, a decline is a free DECLINED with no probe,
no answer is what the fact says; the probes land in the ledger and in the reports."""

from __future__ import annotations

import asyncio
import collections
import itertools
import json
from pathlib import Path
from typing import Any

from aiohttp import web

from reporters.probing import batch
from tests.prober.support import (
    SEED,
    admits_failure,
    declining,
    entries,
    hangs_up,
    new_agent,
    prober,
    question,
    refusals,
    reports,
    right,
    route,
    run,
    wrong,
)
from tests.probing.solver import solve
from tests.support import BureauUnderTest, kid, serving


def app_of(handler: Any) -> web.Application:
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handler)
    return app


async def test_right_wrong_declined_and_silent_agents(bureau: BureauUnderTest,
                                                      tmp_path: Path) -> None:
    agents = {name: new_agent() for name in ("right", "wrong", "declining", "failing",
                                             "silent")}
    handlers = {"right": right, "wrong": wrong, "declining": declining,
                "failing": admits_failure, "silent": hangs_up}
    reporter = await bureau.reporter(("facts", "probes"))
    async with (serving(app_of(handlers["right"])) as u1, serving(app_of(handlers["wrong"])) as u2,
                serving(app_of(handlers["declining"])) as u3,
                serving(app_of(handlers["failing"])) as u4,
                serving(app_of(handlers["silent"])) as u5):
        urls = dict(zip(agents, (u1, u2, u3, u4, u5), strict=True))
        routes = [route(kid(agents[n]), urls[n], timeout_seconds=10) for n in agents]
        async with prober(bureau, tmp_path, routes, limit=5, reporter=reporter) as p:
            await run(p)
            assert p.epoch_seconds == bureau.config.epoch_seconds  # read from /v1/bureau
            assert p.run.results == {"passed": 5, "failed": 10, "declined": 5,
                                     "unfinished": 0, "no_answer": 5}
    me = kid(reporter)
    probes = await entries(bureau.database_url, me, "probe")
    facts = await entries(bureau.database_url, me, "fact")
    by_agent = collections.defaultdict(list)
    for pr in probes:
        by_agent[pr["subject"]].append(pr["passed"])
    assert by_agent == {kid(agents["right"]): [True] * 5, kid(agents["wrong"]): [False] * 5,
                        kid(agents["failing"]): [False] * 5}
    # every agent works through its epoch's batch in order (from 0 again in a new epoch)
    for agent in (agents["right"], agents["wrong"], agents["failing"]):
        places = [tuple(map(int, pr["probe"].split(".")[1:])) for pr in probes
                  if pr["subject"] == kid(agent)]
        assert places[0][1] == 0
        for (e0, i0), (e1, i1) in itertools.pairwise(places):
            assert (e1, i1) == (e0, i0 + 1) or (e1 > e0 and i1 == 0)
        assert {t.probe_id for e, _ in places for t in batch(e, SEED, 5)} >= {
            f"v1.{e}.{i}" for e, i in places}
    fact_of = {f["interaction"]: f for f in facts}
    assert len(fact_of) == 25 and {pr["interaction"] for pr in probes} <= set(fact_of)
    for pr in probes:  # a probe and its fact are one interaction
        assert fact_of[pr["interaction"]]["subject"] == pr["subject"]
        assert fact_of[pr["interaction"]]["observed_at"] == pr["observed_at"]
    claims = collections.defaultdict(set)
    for f in facts:
        claims[f["subject"]].add((f["answered"], f["claimed"], f["caller"], f["check"]))
    assert claims == {
        kid(agents["right"]): {(True, "SUCCESS", None, None)},
        kid(agents["wrong"]): {(True, "SUCCESS", None, None)},
        kid(agents["declining"]): {(True, "DECLINED", None, None)},
        kid(agents["failing"]): {(True, "FAILURE", None, None)},
        kid(agents["silent"]): {(False, None, None, None)},
    }
    assert all(f["latency_ms"] is None for f in facts if not f["answered"])
    assert await refusals(bureau.database_url, me) == []

    got = await reports(bureau, {n: kid(k) for n, k in agents.items()})
    assert got["right"]["probes"] == {"passed": 5, "failed": 0}
    assert got["right"]["outcomes"]["ACCEPTED"] == 5
    assert got["wrong"]["probes"] == {"passed": 0, "failed": 5}
    assert got["wrong"]["outcomes"]["FAILED_DISCOVERED"] == 5  # a confident failure
    assert got["failing"]["outcomes"]["FAILED_ADMITTED"] == 5  # an honest one
    # Declining is free: no failed probe, no scored outcome, and no score to lower.
    assert got["declining"]["probes"] == {"passed": 0, "failed": 0}
    assert got["declining"]["unscored"]["DECLINED"] == 5
    assert sum(got["declining"]["outcomes"].values()) == 0
    assert got["declining"]["score"] is None
    assert got["silent"]["probes"] == {"passed": 0, "failed": 0}
    assert got["silent"]["outcomes"]["NO_RESPONSE"] == 5
    assert got["failing"]["score"]["value"] > got["wrong"]["score"]["value"]


async def test_without_facts_a_decline_leaves_no_entry_at_all(bureau: BureauUnderTest,
                                                             tmp_path: Path) -> None:
    reporter = await bureau.reporter(("probes",))
    decliner, solver = new_agent(), new_agent()
    async with serving(app_of(declining)) as u1, serving(app_of(right)) as u2:
        routes = [route(kid(decliner), u1), route(kid(solver), u2)]
        async with prober(bureau, tmp_path, routes, limit=3, reporter=reporter,
                          facts=False) as p:
            await run(p)
    me = kid(reporter)
    assert await entries(bureau.database_url, me, "fact") == []
    probes = await entries(bureau.database_url, me, "probe")
    assert [(pr["subject"], pr["passed"]) for pr in probes] == [(kid(solver), True)] * 3
    assert await refusals(bureau.database_url, me) == []


async def test_templates_fill_the_path_the_query_and_a_text_body(bureau: BureauUnderTest,
                                                                tmp_path: Path) -> None:
    """GET with the task in the query and a text answer; POST with a hand-written JSON
    body and a path; a decline read from plain text by the route's pattern."""
    seen: list[tuple[str, str, str, str]] = []

    async def text_agent(request: web.Request) -> web.Response:
        body = await request.text()
        seen.append((request.method, request.path, request.query.get("q", ""), body))
        if request.method == "GET":
            return web.Response(text=f"Sure. The answer is {solve(request.query['q'])}.")
        if request.path.startswith("/ask/"):
            return web.Response(text="Sorry, I can't help with that.")
        return web.Response(text=solve(json.loads(body)["prompt"]))

    a, b, c = new_agent(), new_agent(), new_agent()
    routes = [
        {"agent": kid(a), "upstream": "", "probes_per_hour": 360000,
         "request": {"method": "GET", "path": "/q", "query": {"q": "{{task}}", "lang": "en"},
                     "headers": {"User-Agent": "acme-gateway/2"}}},
        {"agent": kid(b), "upstream": "", "probes_per_hour": 360000, "kinds": ["parsing"],
         "request": {"body": '{"prompt": {{task_json}}, "n": 1}',
                     "headers": {"Content-Type": "application/json"}}},
        {"agent": kid(c), "upstream": "", "probes_per_hour": 360000,
         "request": {"method": "POST", "path": "/ask/{{task}}"},
         "response": {"decline_pattern": "(?i)can't help"}},
    ]
    reporter = await bureau.reporter(("facts", "probes"))
    async with serving(app_of(text_agent)) as url:
        for r in routes:
            r["upstream"] = url
        async with prober(bureau, tmp_path, routes, limit=2, reporter=reporter) as p:
            await run(p)
            assert p.run.results["passed"] == 4 and p.run.results["declined"] == 2
    gets = [s for s in seen if s[0] == "GET"]
    assert len(gets) == 2 and all(s[1] == "/q" and s[2] for s in gets)
    posts = [json.loads(s[3]) for s in seen if s[1] == "/"]
    assert len(posts) == 2 and all(set(p) == {"prompt", "n"} for p in posts)
    asked = [s[1] for s in seen if s[1].startswith("/ask/")]
    assert len(asked) == 2
    facts = await entries(bureau.database_url, kid(reporter), "fact")
    assert {f["claimed"] for f in facts if f["subject"] == kid(c)} == {"DECLINED"}
    # the parsing route got only parsing tasks: indices 2 and 7 of the batch
    probes = await entries(bureau.database_url, kid(reporter), "probe")
    assert [pr["probe"].split(".")[2] for pr in probes if pr["subject"] == kid(b)] == ["2", "7"]


async def test_an_answer_that_is_not_json_is_not_well_formed_and_fails(
        bureau: BureauUnderTest, tmp_path: Path) -> None:
    async def garbled(request: web.Request) -> web.Response:
        return web.Response(text='{"answer": ' + solve(await question(request)),
                            content_type="application/json")

    facts, probes = await _probed_twice(bureau, tmp_path, garbled)
    assert [(f["well_formed"], f["claimed"]) for f in facts] == [(False, None)] * 2
    assert [pr["passed"] for pr in probes] == [False, False]


async def _probed_twice(bureau: BureauUnderTest, tmp_path: Path, handler: Any
                        ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Two probes of one agent answering with ``handler``: the facts and probes entered."""
    agent = new_agent()
    reporter = await bureau.reporter(("facts", "probes"))
    async with (serving(app_of(handler)) as url,
                prober(bureau, tmp_path, [route(kid(agent), url)], limit=2,
                       reporter=reporter) as p):
        await run(p)
    return (await entries(bureau.database_url, kid(reporter), "fact"),
            await entries(bureau.database_url, kid(reporter), "probe"))


async def test_an_answer_that_comes_in_pieces_is_read_whole(
        bureau: BureauUnderTest, tmp_path: Path) -> None:
    """The answer was read with ``content.read(n)``, which returns what has arrived so far:
    a right answer whose body came in two pieces was judged on the first (not JSON: a
    failed probe, wrong ground truth). It is read whole, up to its cap."""
    async def in_pieces(request: web.Request) -> web.StreamResponse:
        body = json.dumps({"status": "ok", "answer": solve(await question(request))}).encode()
        out = web.StreamResponse(headers={"Content-Type": "application/json"})
        await out.prepare(request)
        await out.write(body[:5])
        await asyncio.sleep(0.2)  # the agent's own pace: the first piece is read alone
        await out.write(body[5:])
        await out.write_eof()
        return out

    facts, probes = await _probed_twice(bureau, tmp_path, in_pieces)
    assert [f["well_formed"] for f in facts] == [True, True]  # before: [False, False]
    assert [pr["passed"] for pr in probes] == [True, True]
