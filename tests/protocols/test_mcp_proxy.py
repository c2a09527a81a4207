"""MCP through the proxy, end to end: a server built with the ``mcp`` package behind the
proxy, called with its client over streamable HTTP (JSON and SSE answers); one fact per
``tools/call``, none for the session's bookkeeping (docs/proxy.md, "MCP")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aiohttp
import pytest

import reporters
from tests.protocols.mcp_server import mcp_client, mcp_server
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


async def test_a_schema_not_yet_seen_is_asked_for(bureau: BureauUnderTest,
                                                  tmp_path: Path) -> None:
    """A caller that never lists the tools: the proxy asks the server itself (its own
    session, with the mcp package's client) before judging the first tools/call."""
    key = await bureau.reporter(("facts",))
    agent = reporters.key_id(reporters.generate_key())
    async with mcp_server(json_response=True) as base, running_proxy(
            bureau, tmp_path, [{"prefix": "/tools", "agent": agent, "upstream": base,
                                "protocol": "mcp"}], reporter=key) as px:
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
            call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                    "params": {"name": "liar", "arguments": {"a": 1, "b": 1}}}
            async with http.post(px.url + "/tools/mcp", json=call, headers=headers) as resp:
                body = json.loads(await resp.read())
                interaction = resp.headers["Bureau-Interaction"]
        assert body["result"]["structuredContent"] == {"sum": "2"}
        await px.proxy.settle()
    facts = await stored_facts(bureau.database_url, reporters.key_id(key))
    assert outcome(facts[interaction]) == (True, False, "SUCCESS", None)
