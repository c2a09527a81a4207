"""MCP through the proxy, end to end: a server built with the ``mcp`` package behind the
proxy, called with its client over streamable HTTP (JSON and SSE answers); one fact per
``tools/call``, none for the session's bookkeeping (docs/proxy.md, "MCP")."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from mcp.types import PaginatedRequestParams

import reporters
from reporters.protocols import mcp
from tests.protocols.mcp_server import UNCHECKABLE, mcp_client, mcp_server
from tests.proxy.support import running_proxy, stored_facts
from tests.support import BureauUnderTest


def outcome(fact: dict[str, Any]) -> tuple[Any, ...]:
    return fact["answered"], fact["well_formed"], fact["claimed"], fact["derived"]


@pytest.mark.parametrize("answers", ["json", "sse"])
async def test_one_fact_per_tool_call(bureau: BureauUnderTest, tmp_path: Path,
                                      answers: str) -> None:
    key = await bureau.reporter(("facts",))
    agent = reporters.key_id(reporters.generate_key())
    async with mcp_server(json_response=answers == "json") as base, running_proxy(
            bureau, tmp_path, [{"prefix": "/tools", "agent": agent, "upstream": base}],
            reporter=key) as px:
        async with mcp_client(px.url + "/tools/mcp") as (session, ids):
            await session.list_tools()
            assert ids == []  # initialize, its notification, tools/list: no fact
            added = await session.call_tool("add", {"a": 2, "b": 3})
            broken = await session.call_tool("broken", {"a": 2, "b": 3})
            # The client checks the schema too: the answer came through untouched.
            with pytest.raises(RuntimeError, match="Invalid structured content"):
                await session.call_tool("liar", {"a": 2, "b": 3})
            assert added.structured_content == {"sum": 5} and broken.is_error
            calls = list(ids)
        await px.proxy.settle()
        made = await px.metrics()
    assert len(calls) == 3
    facts = await stored_facts(bureau.database_url, reporters.key_id(key))
    assert set(facts) == set(calls)  # nothing for the session's GET stream or DELETE
    assert [outcome(facts[i]) for i in calls] == [
        (True, True, "SUCCESS", None), (True, True, "FAILURE", None),
        (True, False, "SUCCESS", None)]
    assert made.get(("bureau_proxy_mcp_schema_failures_total", (("route", "/tools"),)),
                    0) == 0


def held_initialize(gate: asyncio.Event, seen: list[str]) -> Callable[[Any], Any]:
    """ASGI middleware: an ``initialize`` that does not come through the proxy's caller
    (aiohttp) — the proxy's own session — waits for ``gate``: a slow server."""
    def wrap(app: Any) -> Any:
        async def wrapped(scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] != "http" or scope["method"] != "POST":
                return await app(scope, receive, send)
            chunks, more = [], True
            while more:
                message = await receive()
                chunks.append(message.get("body", b""))
                more = message.get("more_body", False)
            body = b"".join(chunks)
            agent = dict(scope["headers"]).get(b"user-agent", b"")
            if b'"initialize"' in body and b"aiohttp" not in agent:
                seen.append("initialize")
                await gate.wait()
            replayed = False

            async def replay() -> Any:
                nonlocal replayed
                if replayed:
                    return await receive()
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}

            await app(scope, replay, send)
        return wrapped
    return wrap


async def test_unknown_schemas_are_learned_off_the_callers_path(
        bureau: BureauUnderTest, tmp_path: Path) -> None:
    """Issue 32: a caller that never lists the tools. The proxy asks the server itself —
    in the background, once: its answers never wait for that session, however slow the
    server's ``initialize`` (here held until the test lets it go), and it does not ask
    again on every call. Once learned, results are checked against ``outputSchema`` and
    arguments against ``inputSchema``."""
    key = await bureau.reporter(("facts",))
    agent = reporters.key_id(reporters.generate_key())
    gate, asked = asyncio.Event(), []
    async with mcp_server(json_response=True, wrap=held_initialize(gate, asked)) as base, \
            running_proxy(bureau, tmp_path, [{"prefix": "/tools", "agent": agent,
                                              "upstream": base, "protocol": "mcp"}],
                          reporter=key) as px:
        async with aiohttp.ClientSession() as http:
            headers = {"Accept": "application/json, text/event-stream",
                       "Content-Type": "application/json"}
            init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"}}}
            async with http.post(px.url + "/tools/mcp", json=init, headers=headers) as resp:
                assert resp.status == 200, await resp.text()
                session_id = resp.headers.get("Mcp-Session-Id")
            if session_id:
                headers["Mcp-Session-Id"] = session_id
            async with http.post(px.url + "/tools/mcp", headers=headers, json={
                    "jsonrpc": "2.0", "method": "notifications/initialized"}) as resp:
                assert "Bureau-Interaction" not in resp.headers

            async def call(rid: int, arguments: dict[str, Any]) -> tuple[Any, str]:
                body = {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                        "params": {"name": "liar", "arguments": arguments}}
                async with http.post(px.url + "/tools/mcp", json=body,
                                     headers=headers) as resp:
                    return json.loads(await resp.read()), resp.headers["Bureau-Interaction"]

            # While the proxy's own initialize is held, three calls are answered.
            before = [await asyncio.wait_for(call(i, {"a": 1, "b": 1}), 20)
                      for i in range(2, 5)]
            assert asked == ["initialize"]  # asked once, not once per call
            assert all(b["result"]["structuredContent"] == {"sum": "2"} for b, _ in before)
            gate.set()
            mcp_calls = px.proxy._reader("mcp")
            await asyncio.wait_for(mcp_calls.schemas.settled(), 20)
            assert mcp_calls.schemas.known("/tools")
            _, after = await call(5, {"a": 1, "b": 1})
            _, mistaken = await call(6, {"a": 1.5})
        await px.proxy.settle()
        made = await px.metrics()
    facts = await stored_facts(bureau.database_url, reporters.key_id(key))
    # judged without the schema (not known yet), then with it
    assert [outcome(facts[i]) for _, i in before] == [(True, True, "SUCCESS", None)] * 3
    assert outcome(facts[after]) == (True, False, "SUCCESS", None)
    # the low-level server does not check arguments: the liar answers; the caller's
    # mistake alone does not make the answer a decline
    assert facts[mistaken]["claimed"] == "SUCCESS"
    assert made.get(("bureau_proxy_mcp_schema_failures_total", (("route", "/tools"),)),
                    0) == 0


async def test_a_schema_no_validator_can_apply_checks_nothing(
        bureau: BureauUnderTest, tmp_path: Path) -> None:
    """A tool may declare a schema that is valid JSON Schema but cannot be applied (a
    ``$ref`` to nowhere, one that refers to itself without end): it promised nothing
    checkable. Its calls are forwarded and judged as if it declared none — never a
    500 from the proxy instead of the tool's answer."""
    key = await bureau.reporter(("facts",))
    agent = reporters.key_id(reporters.generate_key())
    async with mcp_server(json_response=True) as base, running_proxy(
            bureau, tmp_path, [{"prefix": "/tools", "agent": agent, "upstream": base}],
            reporter=key) as px:
        async with mcp_client(px.url + "/tools/mcp") as (session, ids):
            await session.list_tools()  # the proxy learns the schemas
            answers = [await session.call_tool(name, {"a": 2, "b": 3})
                       for name in UNCHECKABLE]
            calls = list(ids)
        await px.proxy.settle()
    assert [a.structured_content for a in answers] == [{"sum": 5}] * len(UNCHECKABLE)
    facts = await stored_facts(bureau.database_url, reporters.key_id(key))
    assert [outcome(facts[i]) for i in calls] == [(True, True, "SUCCESS", None)] * len(
        UNCHECKABLE)


@pytest.mark.parametrize("schema", UNCHECKABLE.values(), ids=UNCHECKABLE.keys())
def test_what_a_schema_that_cannot_be_applied_makes(schema: dict[str, Any]) -> None:
    """The same schemas as an ``outputSchema`` (which the mcp client cannot apply, so
    no end-to-end call shows it): the result is judged as if none was declared."""
    compiled = mcp.compile_output_schema(schema)
    result = {"content": [], "structuredContent": {"a": 1}}
    assert mcp.judge_result(result, compiled) == mcp.ToolOutcome(True, "SUCCESS")
    assert mcp.callers_mistake({"name": "t", "arguments": {"a": 1}}, {"t"},
                               lambda _: compiled, all_listed=True) is None


async def test_an_unlisted_tool_is_the_callers_mistake_only_after_a_whole_listing(
        bureau: BureauUnderTest, tmp_path: Path) -> None:
    """``tools/list`` is paginated, and a server's tools change. A tool the proxy has not
    seen listed is the caller's mistake (``DECLINED`` when answered ``isError``) only
    once it has seen a whole listing, every page from the first; a whole listing is then
    the route's tools, so a tool the server dropped is the caller's mistake too. Before,
    the first page made the rest of the server's tools "unlisted": their own failures
    were free declines; and a dropped tool stayed listed: a caller calling it made the
    server's refusal a FAILURE."""
    key = await bureau.reporter(("facts",))
    agent = reporters.key_id(reporters.generate_key())
    pages = [["add", "liar"], ["broken"]]
    # the second page waits until the caller asks for it: the proxy's own asking, which
    # the first calls start, cannot see a whole listing before the test says so
    later_pages = asyncio.Event()
    calls: dict[str, list[str]] = {}
    async with mcp_server(json_response=True, pages=pages,
                          later_pages=later_pages) as base, running_proxy(
            bureau, tmp_path, [{"prefix": prefix, "agent": agent, "upstream": base}
                               for prefix in ("/listed", "/asked")], reporter=key) as px:
        async with mcp_client(px.url + "/listed/mcp") as (session, ids):

            async def tool(case: str, name: str) -> None:
                before = len(ids)
                await session.call_tool(name, {"a": 1, "b": 2})
                calls[case] = ids[before:]

            first = await session.list_tools()  # the first page only
            assert first.next_cursor is not None
            await tool("broken, the second page unseen", "broken")
            await tool("not listed, the second page unseen", "nope")
            later_pages.set()
            await session.list_tools(params=PaginatedRequestParams(cursor=first.next_cursor))
            await tool("broken, every page seen", "broken")
            await tool("not listed, every page seen", "nope")
            pages[0].remove("add")  # the server drops a tool; the caller lists again
            again = await session.list_tools()
            await session.list_tools(params=PaginatedRequestParams(cursor=again.next_cursor))
            await tool("dropped", "add")
        # A caller that never lists: the proxy asks the server itself, every page.
        async with mcp_client(px.url + "/asked/mcp") as (session, ids):
            await session.call_tool("add", {"a": 1, "b": 2})  # not known yet: asked
            await asyncio.wait_for(px.proxy._reader("mcp").schemas.settled(), 30)
            await tool("broken, asked by the proxy", "broken")
            await tool("not listed, asked by the proxy", "nope")
        await px.proxy.settle()
    facts = await stored_facts(bureau.database_url, reporters.key_id(key))
    assert {case: facts[i[0]]["claimed"] for case, i in calls.items()} == {
        "broken, the second page unseen": "FAILURE",
        "not listed, the second page unseen": "FAILURE",  # nothing says it is not a tool
        "broken, every page seen": "FAILURE",
        "not listed, every page seen": "DECLINED",
        "dropped": "DECLINED",
        "broken, asked by the proxy": "FAILURE",
        "not listed, asked by the proxy": "DECLINED",
    }
