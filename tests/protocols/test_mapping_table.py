"""Every row of docs/proxy.md's protocol tables, shown: for each case an agent on
loopback answers exactly the protocol bytes the row names (a JSON-RPC answer, an event
stream, an error code), a call goes through the proxy, and the fact in the bureau's
ledger is the row's. The real SDKs' agents are in test_a2a_proxy.py and
test_mcp_proxy.py; here the answers are ones those SDKs would never send."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from aiohttp import web

import reporters
from reporters.httpsig import sign_request_headers
from tests.docs.test_docs import _table_rows
from tests.proxy.support import (
    RunningProxy,
    ShiftedClock,
    running_proxy,
    stored_facts,
    upstream,
)
from tests.support import BureauUnderTest

DOCS = Path(__file__).resolve().parent.parent.parent / "docs"
SIGNER = reporters.generate_key()
OTHER_SIGNER = reporters.generate_key()
#: Between a task's first answer and the one that shows its final state, the scenarios
#: move the proxy's clock on this much: `latency_ms` "to the final state" is at least
#: this, "the answer" and "the first answer" less (no loopback answer takes seconds).
PACE = 5.0
#: The proxy's windows: no machine is slow enough to pass them between a scenario's
#: calls; the test passes them on purpose at the end (QUIET: a silence).
SETTLE, QUIET = 30.0, 60.0


class Pacing:
    """The proxy's clock (real time plus what the scenarios add), and the hang-up the
    agent waits for before it finishes the stream the caller left."""

    def __init__(self) -> None:
        self.clock = ShiftedClock()
        self.hung_up = asyncio.Event()


PACING = Pacing()
HUNG_UP = "a stream the caller hangs up on, then completed"


def task(slug: str, state: str, context: str | None = None) -> dict[str, Any]:
    return {"id": f"t-{slug}", "contextId": context or f"c-{slug}",
            "status": {"state": f"TASK_STATE_{state}"},
            "artifacts": [{"artifactId": "a", "parts": [{"text": "ok"}]}]}


def rpc(result: Any = None, error: int | None = None, rid: Any = 1) -> dict[str, Any]:
    if error is not None:
        return {"jsonrpc": "2.0", "id": rid, "error": {"code": error, "message": "no"}}
    return {"jsonrpc": "2.0", "id": rid, "result": result}


def sse(*docs: dict[str, Any]) -> bytes:
    return b"".join(b"data: " + json.dumps(d).encode() + b"\n\n" for d in docs)


CARD = {"name": "canned", "description": "answers as told", "version": "1",
        "supportedInterfaces": [{"url": "http://x/", "protocolBinding": "JSONRPC",
                                 "protocolVersion": "1.0"}],
        "capabilities": {"streaming": True}, "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "solve", "name": "solve", "description": "d", "tags": ["t"],
                    "outputModes": ["text/plain"]}]}
SUM = {"type": "object", "properties": {"sum": {"type": "integer"}}, "required": ["sum"]}
ARGS = {"type": "object", "properties": {"a": {"type": "integer"}}}
TOOLS = {"tools": [{"name": "add", "inputSchema": ARGS, "outputSchema": SUM}]}
IS_ERROR = rpc({"content": [{"type": "text", "text": "x"}], "isError": True})

#: case -> how its agent answers a send (1.0); polls and cancels answer the task.
SENDS: dict[str, Any] = {
    "completed": rpc({"task": task("completed", "COMPLETED")}),
    "failed": rpc({"task": task("failed", "FAILED")}),
    "rejected": rpc({"task": task("rejected", "REJECTED")}),
    "canceled by the caller": rpc({"task": task("cancel", "WORKING")}),
    "canceled by the agent": rpc({"task": task("agent-cancel", "CANCELED")}),
    "input-required, then silence": rpc({"task": task("input", "INPUT_REQUIRED")}),
    "auth-required, then silence": rpc({"task": task("auth", "AUTH_REQUIRED")}),
    "working, then silence": rpc({"task": task("working", "WORKING")}),
    "working, then completed in a poll with `\"id\": null`": rpc(
        {"task": task("poll", "WORKING")}),
    "canceled by another caller, seen in a poll": rpc({"task": task("other", "WORKING")}),
    "a message, no task": rpc({"message": {"messageId": "m", "role": "ROLE_AGENT",
                                           "parts": [{"text": "hi"}]}}),
    "a timestamp without a zone, 0.3 names in 1.0 shapes (fasta2a)": rpc({"task": {
        "id": "t-fasta", "contextId": "c-fasta",
        "status": {"state": "completed", "timestamp": "2026-12-07T06:19:36.990163"},
        "artifacts": [{"artifactId": "a", "parts": [{"text": "ok"}]}]}}),
    "error -32602 (invalid params)": rpc(error=-32602),
    "error -32004 (unsupported operation)": rpc(error=-32004),
    "error -32603 (internal)": rpc(error=-32603),
    "result not valid for the method": rpc("a string"),
    "not JSON-RPC (an HTML 500)": b"<html>oops</html>",
    "a part outside the skill's output modes": rpc({"task": {
        **task("pdf", "COMPLETED"), "artifacts": [{"artifactId": "a", "parts": [
            {"raw": "JVBERg==", "mediaType": "application/pdf"}]}]}}),
    "a skill the card lists": rpc({"task": task("skill", "COMPLETED")}),
    "a skill the card does not list": rpc({"task": task("noskill", "COMPLETED")}),
    "a skill the card does not list, then failed": rpc(
        {"task": task("noskill-failed", "FAILED")}),
    "a skill the card does not list, working, then failed in a poll": rpc(
        {"task": task("noskill-poll", "WORKING")}),
    "failed, then completed in its context": rpc({"task": task("retry1", "FAILED", "ctx-r")}),
    "failed, then its context sent to another agent": rpc(
        {"task": task("switch1", "FAILED", "ctx-s")}),
}
STREAMS: dict[str, bytes] = {
    "a stream to its final state": sse(
        rpc({"task": task("s1", "WORKING")}),
        rpc({"statusUpdate": {"taskId": "t-s1", "contextId": "c-s1",
                              "status": {"state": "TASK_STATE_COMPLETED"}}})),
    "a stream the caller hangs up on, then completed": sse(
        rpc({"task": task("s3", "WORKING")}),
        rpc({"statusUpdate": {"taskId": "t-s3", "contextId": "c-s3",
                              "status": {"state": "TASK_STATE_COMPLETED"}}})),
    "a stream cut before the final state": sse(rpc({"task": task("s2", "WORKING")})),
}
TOOL_CALLS: dict[str, Any] = {
    "tools/call: a result": rpc({"content": [], "structuredContent": {"sum": 3}}),
    "tools/call: isError": IS_ERROR,
    "tools/call: isError for arguments the inputSchema refuses": IS_ERROR,
    "tools/call: isError for a tool the server does not list": IS_ERROR,
    "tools/call: structuredContent breaks the outputSchema": rpc(
        {"content": [], "structuredContent": {"sum": "3"}}),
    "tools/call: no structuredContent for a declared outputSchema": rpc({"content": []}),
    "tools/call: not a CallToolResult": rpc({"content": "nope"}),
    "tools/call: error -32602 (unknown tool)": rpc(error=-32602),
    "tools/call: error -32603 (internal)": rpc(error=-32603),
}


async def agent(request: web.Request) -> web.StreamResponse:
    if request.method == "GET":
        return web.json_response(CARD)
    case = CASES[request.match_info["tail"].split("/")[0]]
    try:
        doc = json.loads(await request.read())
    except ValueError:
        return web.Response(status=400, text="that is not JSON")
    method = doc["method"]
    if method == "tools/list":
        return web.json_response(rpc(TOOLS, rid=doc["id"]))
    if method in ("initialize", "notifications/initialized"):
        return web.json_response(rpc({}, rid=doc.get("id")), status=200)
    if method == "tools/call":
        return web.json_response({**TOOL_CALLS[case], "id": doc["id"]})
    if method in ("GetTask", "CancelTask"):
        slug_, state = {
            "working, then completed in a poll with `\"id\": null`": ("poll", "COMPLETED"),
            "canceled by another caller, seen in a poll": ("other", "CANCELED"),
            "a skill the card does not list, working, then failed in a poll": (
                "noskill-poll", "FAILED"),
        }.get(case, ("cancel", "CANCELED" if method == "CancelTask" else "WORKING"))
        return web.json_response(rpc(task(slug_, state), rid=doc["id"]))
    if case.startswith("failed, then") and doc["params"]["message"].get("contextId"):
        return web.json_response(rpc({"task": task("retry2", "COMPLETED",
                                                   doc["params"]["message"]["contextId"])}))
    if method == "SendStreamingMessage":
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        events = STREAMS[case].split(b"\n\n")[:-1]
        for i, event in enumerate(events):
            if i:
                if case == HUNG_UP:  # the rest comes once the caller has left
                    await PACING.hung_up.wait()
                PACING.clock.advance(PACE)  # the final state comes later than the first
            await resp.write(event + b"\n\n")
        await resp.write_eof()
        return resp
    answer = SENDS[case]
    if isinstance(answer, bytes):
        return web.Response(body=answer, status=500, content_type="text/html")
    return web.json_response(answer)


def slug(case: str) -> str:
    return "".join(c if c.isalnum() or c in "-,()" else "~" if c == "/" else "_"
                   for c in case)


async def post(px: RunningProxy, case: str, doc: Any, *, route: str = "/a2a",
               raw: bytes | None = None, signer: Any = SIGNER) -> str | None:
    url = f"{px.url}{route}/{slug(case)}"
    body = raw if raw is not None else json.dumps(doc).encode()
    async with px.session.post(url, data=body, headers={
            "Content-Type": "application/json",
            **sign_request_headers(signer, "POST", url)}) as resp:
        await resp.read()
        return resp.headers.get("Bureau-Interaction")


def send(text: str = "hi", method: str = "SendMessage", context: str | None = None,
         metadata: dict[str, str] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"messageId": "m1", "role": "ROLE_USER",
                               "parts": [{"text": text}]}
    if context:
        message["contextId"] = context
    params: dict[str, Any] = {"message": message}
    if metadata:
        params["metadata"] = metadata
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}


Scenario = Callable[[RunningProxy, str], Awaitable[str | None]]


async def one_send(px: RunningProxy, case: str) -> str | None:
    skill = {"a skill the card lists": "solve", "a skill the card does not list": "juggle",
             "a skill the card does not list, then failed": "juggle",
             "a part outside the skill's output modes": "solve"}
    return await post(px, case, send(metadata={"skill": skill[case]} if case in skill
                                     else None))


async def cancelled(px: RunningProxy, case: str) -> str | None:
    first = await post(px, case, send())
    await post(px, case, {"jsonrpc": "2.0", "id": 2, "method": "GetTask",
                          "params": {"id": "t-cancel"}})
    PACING.clock.advance(PACE)
    await post(px, case, {"jsonrpc": "2.0", "id": 3, "method": "CancelTask",
                          "params": {"id": "t-cancel"}})
    return first


async def polled_with_a_null_id(px: RunningProxy, case: str) -> str | None:
    first = await post(px, case, send())
    PACING.clock.advance(PACE)
    again = await post(px, case, {"jsonrpc": "2.0", "id": None, "method": "GetTask",
                                  "params": {"id": "t-poll"}})
    assert again == first  # the same task: the poll is one of its turns
    return first


async def cancelled_by_another(px: RunningProxy, case: str) -> str | None:
    first = await post(px, case, send())
    theirs = await post(px, case, {"jsonrpc": "2.0", "id": 2, "method": "CancelTask",
                                   "params": {"id": "t-other"}}, signer=OTHER_SIGNER)
    assert theirs is None  # not a task that caller follows: no fact
    PACING.clock.advance(PACE)
    await post(px, case, {"jsonrpc": "2.0", "id": 3, "method": "GetTask",
                          "params": {"id": "t-other"}})
    return first


async def older_shapes(px: RunningProxy, case: str) -> str | None:
    return await post(px, case, {"jsonrpc": "2.0", "id": "1", "method": "message/send",
                                 "params": {"message": {
                                     "role": "user", "kind": "message", "messageId": "m1",
                                     "parts": [{"kind": "text", "text": "hi"}]}}})


async def retried(px: RunningProxy, case: str) -> str | None:
    first = await post(px, case, send())
    ctx = "ctx-r" if "completed" in case else "ctx-s"
    route = "/a2a" if "completed" in case else "/other"
    await post(px, case, send(context=ctx), route=route)
    return first


async def streamed(px: RunningProxy, case: str) -> str | None:
    return await post(px, case, send(method="SendStreamingMessage"))


async def hung_up(px: RunningProxy, case: str) -> str | None:
    url = f"{px.url}/a2a/{slug(case)}"
    async with px.session.post(url, data=json.dumps(send(method="SendStreamingMessage")),
                               headers={"Content-Type": "application/json",
                                        **sign_request_headers(SIGNER, "POST", url)}) as resp:
        await resp.content.readline()  # the first event has come: the caller hangs up
        interaction = resp.headers.get("Bureau-Interaction")
        resp.close()
    PACING.hung_up.set()  # and only then does the agent finish its stream
    held = px.proxy.facts
    await asyncio.wait_for(until_ended(held, interaction), 30)
    return interaction


async def until_ended(held: Any, interaction: str | None) -> None:
    """Until the proxy has seen the stream's task end (it reads on after the caller left)."""
    while interaction in held.tasks._by_interaction or interaction in held.tasks._starts:
        await asyncio.sleep(0.02)


async def failed_in_a_poll(px: RunningProxy, case: str) -> str | None:
    first = await post(px, case, send(metadata={"skill": "juggle"}))
    PACING.clock.advance(PACE)
    again = await post(px, case, {"jsonrpc": "2.0", "id": 2, "method": "GetTask",
                                  "params": {"id": "t-noskill-poll"}})
    assert again == first
    return first


async def tool_call(px: RunningProxy, case: str) -> str | None:
    await post(px, case, {"jsonrpc": "2.0", "id": 7, "method": "tools/list"}, route="/mcp")
    name, arguments = {
        "tools/call: isError for arguments the inputSchema refuses": ("add", {"a": "x"}),
        "tools/call: isError for a tool the server does not list": ("nope", {}),
    }.get(case, ("add", {}))
    return await post(px, case, {"jsonrpc": "2.0", "id": 8, "method": "tools/call",
                                 "params": {"name": name, "arguments": arguments}},
                      route="/mcp")


async def bookkeeping(px: RunningProxy, case: str) -> str | None:
    ids = [await post(px, case, {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                 "params": {}}, route="/mcp"),
           await post(px, case, {"jsonrpc": "2.0", "method": "notifications/initialized"},
                      route="/mcp"),
           await post(px, case, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
                      route="/mcp")]
    assert ids == [None, None, None]
    return None


async def malformed(px: RunningProxy, case: str) -> str | None:
    return await post(px, case, None, raw=b'{"jsonrpc": "2.0", "method": "SendMessage",')


async def unanswered(px: RunningProxy, case: str) -> str | None:
    return await post(px, case, send(), route="/dead")


SCENARIOS: dict[str, Scenario] = {
    **dict.fromkeys(SENDS, one_send),
    "canceled by the caller": cancelled,
    "working, then completed in a poll with `\"id\": null`": polled_with_a_null_id,
    "canceled by another caller, seen in a poll": cancelled_by_another,
    "a skill the card does not list, working, then failed in a poll": failed_in_a_poll,
    "a timestamp without a zone, 0.3 names in 1.0 shapes (fasta2a)": older_shapes,
    "failed, then completed in its context": retried,
    "failed, then its context sent to another agent": retried,
    **dict.fromkeys(STREAMS, streamed),
    "a stream the caller hangs up on, then completed": hung_up,
    "a streaming call answered without a stream": streamed,
    **dict.fromkeys(TOOL_CALLS, tool_call),
    "initialize, tools/list, notifications": bookkeeping,
    "a malformed JSON-RPC body": malformed,
    "no answer (refused, dropped, timed out), then silence": unanswered,
}


CASES = {slug(case): case for case in SCENARIOS}


def latency(value: int | None) -> str:
    """The documented `latency_ms` of a fact, by what it must be."""
    if value is None:
        return "null"
    return "to the final state" if value >= PACE * 1000 else "the answer"


def cell(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


async def test_every_row_of_the_protocol_tables(bureau: BureauUnderTest,
                                                tmp_path: Path) -> None:
    text = (DOCS / "proxy.md").read_text()
    rows = _table_rows(text, "| case | `answered` |")
    documented = {r[0]: r[1:] for r in rows}
    assert set(documented) == set(SCENARIOS)  # a scenario for every row, and no more
    key = await bureau.reporter(("facts",))
    agent_id = reporters.key_id(reporters.generate_key())
    other = reporters.key_id(reporters.generate_key())

    async def json_instead_of_a_stream(request: web.Request) -> web.StreamResponse:
        return web.json_response(rpc({"task": task("nostream", "COMPLETED")}))

    async def canned(request: web.Request) -> web.StreamResponse:
        if "without_a_stream" in request.path:
            return await json_instead_of_a_stream(request)
        return await agent(request)

    async with upstream(canned) as up, running_proxy(bureau, tmp_path, [
            {"prefix": "/a2a", "agent": agent_id, "upstream": up, "protocol": "a2a"},
            {"prefix": "/other", "agent": other, "upstream": up, "protocol": "a2a"},
            {"prefix": "/mcp", "agent": agent_id, "upstream": up},
            {"prefix": "/dead", "agent": agent_id, "upstream": "http://127.0.0.1:9",
             "protocol": "a2a"}], reporter=key, settle=SETTLE, quiet=QUIET,
            clock=PACING.clock) as px:
        PACING.hung_up = asyncio.Event()
        ids = {case: await run(px, case) for case, run in SCENARIOS.items()}
        PACING.clock.advance(QUIET + 1)  # then silence: what waited on it is decided
        await asyncio.wait_for(px.proxy.settle(), 60)
    facts = await stored_facts(bureau.database_url, reporters.key_id(key))
    got = {}
    for case, interaction in ids.items():
        if interaction is None:
            got[case] = ["no fact"] * 6
            continue
        f = facts[interaction]
        promises = ", ".join(f"{p['promise']} {'kept' if p['kept'] else 'broken'}"
                             for p in sorted(f["promises"], key=lambda p: p["promise"]))
        got[case] = [cell(f["answered"]), cell(f["well_formed"]), cell(f["claimed"]),
                     cell(f["derived"]), promises or "—", latency(f["latency_ms"])]
    # "the first answer" is an answer too: under PACE, before the final state came
    want = {case: [c.strip("`") for c in cells[:5]] +
            [cells[5].replace("the first answer", "the answer").strip("`")]
            for case, cells in documented.items()}
    assert {c: g for c, g in got.items() if g != want[c]} == {}, want


async def test_the_card_is_read_at_start_and_a_broken_one_leaves_the_route_working(
        bureau: BureauUnderTest, tmp_path: Path) -> None:
    async def no_card(request: web.Request) -> web.StreamResponse:
        if request.method == "GET":
            return web.Response(status=404)
        return web.json_response(rpc({"task": task("x", "COMPLETED")}))

    key = await bureau.reporter(("facts",))
    async with upstream(no_card) as up, running_proxy(bureau, tmp_path, [
            {"prefix": "/a2a", "agent": reporters.key_id(reporters.generate_key()),
             "upstream": up, "protocol": "a2a"}], reporter=key) as px:
        interaction = await post(px, "completed", send())
        assert px.proxy.cards.declared("/a2a") is None
        metrics = await px.metrics()
        await px.proxy.settle()
    assert metrics[("bureau_proxy_agent_card_failures_total",
                    (("reason", "status"), ("route", "/a2a")))] == 1
    assert interaction is not None
    fact = (await stored_facts(bureau.database_url, reporters.key_id(key)))[interaction]
    assert (fact["claimed"], fact["promises"]) == ("SUCCESS", [])

