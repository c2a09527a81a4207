"""The proxy end to end: real upstream servers, the real bureau, the facts it stored."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import yarl
from aiohttp import web

from reporters import Reporter, wire
from reporters.httpsig import sign_request_headers
from reporters.proxy import REPORTER_HEADER, Exchange
from tests.proxy.support import new_agent, running_proxy, stored_facts, upstream
from tests.support import BureauUnderTest, kid

SCHEMA = {"type": "object", "required": ["answer"], "properties": {"answer": {"type": "integer"}}}


async def echo(request: web.Request) -> web.Response:
    """Says back what it got, so a test can see what the proxy forwarded."""
    return web.json_response({
        "answer": 42, "method": request.method, "path": request.raw_path,
        "body": (await request.read()).decode(),
        "headers": {k.lower(): v for k, v in request.headers.items()}})


async def facts_of(bureau: BureauUnderTest, proxy_reporter: str) -> dict[str, dict[str, Any]]:
    return await stored_facts(bureau.database_url, proxy_reporter)


async def test_forwards_the_call_and_reports_one_fact(bureau: BureauUnderTest,
                                                      tmp_path: Path) -> None:
    agent = new_agent()
    async with upstream(echo) as up, running_proxy(bureau, tmp_path, [
            {"prefix": "/alpha", "agent": agent, "upstream": up + "/api", "schema": SCHEMA}],
            agents={agent: {"promises": [{"promise": "p95-under-2s", "max_ms": 2000},
                                         {"promise": "instant", "max_ms": 0}]}}) as px:
        target = yarl.URL(px.url + "/alpha/solve%20it?x=1&y=%2F", encoded=True)
        async with px.session.post(target, data=b'{"q":1}',
                                   headers={"Connection": "keep-alive, X-Secret",
                                            "X-Secret": "hop", "X-Keep": "end-to-end"}) as resp:
            assert resp.status == 200
            seen = await resp.json()
            interaction = resp.headers["Bureau-Interaction"]
            assert resp.headers[REPORTER_HEADER] == px.proxy.reporter.key_id
        assert seen["method"] == "POST"
        assert seen["path"] == "/api/solve%20it?x=1&y=%2F"
        assert seen["body"] == '{"q":1}'
        assert seen["headers"]["x-keep"] == "end-to-end"
        assert "x-secret" not in seen["headers"]  # named by Connection: hop-by-hop
        assert interaction == "px-test:000000"
        await px.proxy.settle(release=True)
        facts = await facts_of(bureau, px.proxy.reporter.key_id)
    fact = facts[interaction]
    assert fact["subject"] == agent
    assert fact["caller"] is None
    assert fact["answered"] is True and fact["well_formed"] is True
    assert isinstance(fact["latency_ms"], int) and fact["latency_ms"] < 2000
    assert fact["promises"] == [{"promise": "p95-under-2s", "kept": True},
                                {"promise": "instant", "kept": fact["latency_ms"] == 0}]
    assert fact["claimed"] is None and fact["check"] is None and fact["derived"] is None


async def test_malformed_answers_are_not_well_formed(bureau: BureauUnderTest,
                                                     tmp_path: Path) -> None:
    bodies = {"/text": b"hello, not json", "/dup": b'{"answer": 1, "answer": 2}',
              "/nan": b'{"answer": NaN}', "/schema": b'{"answer": "forty-two"}',
              "/good": b'{"answer": 42}'}

    async def answer(request: web.Request) -> web.Response:
        return web.Response(body=bodies[request.path], content_type="application/json")

    agent = new_agent()
    async with upstream(answer) as up, running_proxy(bureau, tmp_path, [
            {"prefix": "/a", "agent": agent, "upstream": up, "schema": SCHEMA}]) as px:
        ids = {path: (await px.call("GET", "/a" + path))[2] for path in bodies}
        await px.proxy.settle(release=True)
        facts = await facts_of(bureau, px.proxy.reporter.key_id)
    assert {p: facts[i]["well_formed"] for p, i in ids.items()} == {
        "/text": False, "/dup": False, "/nan": False, "/schema": False, "/good": True}
    assert all(facts[i]["answered"] for i in ids.values())


async def test_upstream_down_is_not_answered(bureau: BureauUnderTest, tmp_path: Path) -> None:
    async with upstream(echo) as gone:
        pass  # the port is closed again: connections are refused
    agent = new_agent()
    async with running_proxy(bureau, tmp_path, [
            {"prefix": "/down", "agent": agent, "upstream": gone}],
            agents={agent: {"promises": [{"promise": "fast", "max_ms": 2000}]}}) as px:
        status, body, interaction = await px.call("POST", "/down/x", {"q": 1})
        assert status == 502 and json.loads(body)["status"] == "rejected"
        await px.proxy.settle(release=True)
        fact = (await facts_of(bureau, px.proxy.reporter.key_id))[interaction]
    assert fact["answered"] is False
    assert fact["latency_ms"] is None and fact["well_formed"] is None
    assert fact["promises"] == [{"promise": "fast", "kept": False}]


async def test_timeout_is_not_answered(bureau: BureauUnderTest, tmp_path: Path) -> None:
    async def slow(request: web.Request) -> web.Response:
        await asyncio.sleep(2)
        return web.json_response({})

    async with upstream(slow) as up, running_proxy(bureau, tmp_path, [
            {"prefix": "/slow", "agent": new_agent(), "upstream": up,
             "timeout_seconds": 0.2}]) as px:
        status, _, interaction = await px.call("GET", "/slow")
        assert status == 504
        await px.proxy.settle(release=True)
        fact = (await facts_of(bureau, px.proxy.reporter.key_id))[interaction]
    assert fact["answered"] is False


async def test_signed_caller_is_named_and_bad_signatures_are_not(bureau: BureauUnderTest,
                                                                  tmp_path: Path) -> None:
    caller = wire.generate_key()
    async with upstream(echo) as up, running_proxy(bureau, tmp_path, [
            {"prefix": "/a", "agent": new_agent(), "upstream": up}]) as px:
        _, _, signed = await px.call("GET", "/a/q?x=1", signer=caller)
        # Signed for another path: invalid. The call still goes through.
        forged = sign_request_headers(caller, "GET", px.url + "/a/elsewhere")
        status, _, bad = await px.call("GET", "/a/q?x=1", headers=forged)
        assert status == 200
        _, _, unsigned = await px.call("GET", "/a/q?x=1")
        await px.proxy.settle(release=True)
        facts = await facts_of(bureau, px.proxy.reporter.key_id)
    assert facts[signed]["caller"] == kid(caller)
    assert facts[bad]["caller"] is None
    assert facts[unsigned]["caller"] is None


async def test_claim_and_deliverable_check(bureau: BureauUnderTest, tmp_path: Path) -> None:
    async def solver(request: web.Request) -> web.Response:
        task = await request.json()
        if task["op"] == "mul":
            return web.json_response({"status": "declined", "answer": None})
        return web.json_response({"status": "ok", "answer": task["a"] + task["b"] + task["bias"]})

    def check(ex: Exchange) -> Any:
        task = json.loads(ex.request_body)
        if not isinstance(ex.document, dict) or ex.document.get("status") != "ok":
            return "FAIL"
        return "PASS" if ex.document.get("answer") == task["a"] + task["b"] else "FAIL"

    route = {"prefix": "/s", "agent": new_agent(), "upstream": up_placeholder(),
             "claim": {"pointer": "/status", "values": {"ok": "SUCCESS", "declined": "DECLINED"}}}
    async with upstream(solver) as up:
        route["upstream"] = up
        async with running_proxy(bureau, tmp_path, [route], checks={"/s": check}) as px:
            right = (await px.call("POST", "/s", {"op": "add", "a": 1, "b": 2, "bias": 0}))[2]
            wrong = (await px.call("POST", "/s", {"op": "add", "a": 1, "b": 2, "bias": 5}))[2]
            declined = (await px.call("POST", "/s", {"op": "mul", "a": 1, "b": 2}))[2]
            await px.proxy.settle(release=True)
            facts = await facts_of(bureau, px.proxy.reporter.key_id)
    assert (facts[right]["claimed"], facts[right]["check"]) == ("SUCCESS", "PASS")
    assert (facts[wrong]["claimed"], facts[wrong]["check"]) == ("SUCCESS", "FAIL")
    assert (facts[declined]["claimed"], facts[declined]["check"]) == ("DECLINED", "FAIL")


def up_placeholder() -> str:
    return "http://127.0.0.1:9"


async def test_retry_accepted(bureau: BureauUnderTest, tmp_path: Path) -> None:
    """A scripted caller: the agent fails once, the caller re-sends the same request,
    gets an answer and keeps it."""
    attempts = 0

    async def flaky_once(request: web.Request) -> web.Response:
        nonlocal attempts
        attempts += 1
        if attempts == 1:
            return web.json_response({"error": "busy"}, status=503)
        return web.json_response({"answer": 3})

    caller = wire.generate_key()
    async with upstream(flaky_once) as up, running_proxy(bureau, tmp_path, [
            {"prefix": "/a", "agent": new_agent(), "upstream": up}]) as px:
        first = await px.call("POST", "/a/add", {"a": 1, "b": 2}, signer=caller)
        second = await px.call("POST", "/a/add", {"a": 1, "b": 2}, signer=caller)
        assert (first[0], second[0]) == (503, 200)
        await px.proxy.settle()  # waits out the window: the caller did not retry again
        facts = await facts_of(bureau, px.proxy.reporter.key_id)
    assert facts[first[2]]["derived"] == "RETRY_ACCEPTED"
    assert facts[second[2]]["derived"] is None
    assert facts[first[2]]["caller"] == facts[second[2]]["caller"] == kid(caller)


async def test_switched_agent(bureau: BureauUnderTest, tmp_path: Path) -> None:
    """The same caller sends the same task to another agent."""
    async def wrong(request: web.Request) -> web.Response:
        return web.Response(text="I am not JSON")

    caller = wire.generate_key()
    a, b = new_agent(), new_agent()
    async with upstream(wrong) as up_a, upstream(echo) as up_b, running_proxy(
            bureau, tmp_path, [{"prefix": "/a", "agent": a, "upstream": up_a},
                               {"prefix": "/b", "agent": b, "upstream": up_b}]) as px:
        left = await px.call("POST", "/a/translate", {"text": "bonjour"}, signer=caller)
        went = await px.call("POST", "/b/translate", {"text": "bonjour"}, signer=caller)
        await px.proxy.settle()
        facts = await facts_of(bureau, px.proxy.reporter.key_id)
    assert (facts[left[2]]["subject"], facts[left[2]]["derived"]) == (a, "SWITCHED_AGENT")
    assert facts[left[2]]["well_formed"] is False
    assert (facts[went[2]]["subject"], facts[went[2]]["derived"]) == (b, None)


async def test_abandoned(bureau: BureauUnderTest, tmp_path: Path) -> None:
    """The caller gets an error and never comes back."""
    async def broken(request: web.Request) -> web.Response:
        return web.json_response({"error": "internal"}, status=500)

    caller, other = wire.generate_key(), wire.generate_key()
    async with upstream(broken) as up, running_proxy(bureau, tmp_path, [
            {"prefix": "/a", "agent": new_agent(), "upstream": up}], quiet=0.8) as px:
        gone = await px.call("POST", "/a/x", {"n": 1}, signer=caller)
        # Someone else failing and then coming back with other business: not abandoned.
        stayed = await px.call("POST", "/a/x", {"n": 1}, signer=other)
        await asyncio.sleep(0.4)
        await px.call("POST", "/a/y", {"n": 2}, signer=other)
        await px.proxy.settle()
        facts = await facts_of(bureau, px.proxy.reporter.key_id)
    assert facts[gone[2]]["derived"] == "ABANDONED"
    assert facts[stayed[2]]["derived"] is None


async def test_ids_survive_a_restart(bureau: BureauUnderTest, tmp_path: Path) -> None:
    key = await bureau.reporter(("facts",))
    seen: list[str] = []
    for _ in range(2):
        async with upstream(echo) as up, running_proxy(bureau, tmp_path, [
                {"prefix": "/a", "agent": new_agent(), "upstream": up}], reporter=key) as px:
            seen.append((await px.call("GET", "/a"))[2])
            seen.append((await px.call("GET", "/a"))[2])
    assert seen[:2] == ["px-test:000000", "px-test:000001"]
    assert len(set(seen)) == 4 and seen[2] == "px-test:001000"  # next lease, never reused
    # close() released the held facts into the durable spool; whoever opens it next
    # delivers them.
    async with Reporter(key, bureau.url, tmp_path / "spool") as later:
        await later.flush()
    facts = await facts_of(bureau, kid(key))
    assert set(seen) <= set(facts)


async def test_unknown_route_is_404_and_reports_nothing(bureau: BureauUnderTest,
                                                        tmp_path: Path) -> None:
    async with upstream(echo) as up, running_proxy(bureau, tmp_path, [
            {"prefix": "/alpha", "agent": new_agent(), "upstream": up}]) as px:
        async with px.session.get(px.url + "/alphabet") as resp:
            assert resp.status == 404
            assert (await resp.json())["code"] == "NOT_FOUND"
        await px.proxy.settle(release=True)
        assert await facts_of(bureau, px.proxy.reporter.key_id) == {}
