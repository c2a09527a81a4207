"""MCP through the proxy with MCP's reference server from the package registry (issue 32):
``mcp-server-time`` (stdio), served over HTTP by ``mcp-proxy`` as deployments reach it,
driven through the proxy by the ``mcp`` package's own client over streamable HTTP
(``mcp-proxy`` answers with SSE). One fact per ``tools/call``, none for the session's
plumbing; a caller's bad arguments are the caller's (``DECLINED``), not the tool's
failure, although the server answers them ``isError: true`` like its own failures."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import pytest

import reporters
from tests.protocols.mcp_server import mcp_client
from tests.proxy.support import running_proxy, stored_facts
from tests.support import BureauUnderTest, missing

pytestmark = pytest.mark.thirdparty

ROOT = Path(__file__).resolve().parents[2]


def _programs() -> tuple[str, str]:
    """mcp-proxy (a venv of its own: it needs mcp<2, .ci/run makes it) and
    mcp-server-time (the test extra, beside this Python)."""
    proxy = os.environ.get("MCP_PROXY_BIN") or str(ROOT / ".venv-mcp-proxy/bin/mcp-proxy")
    server = shutil.which("mcp-server-time", path=str(Path(sys.executable).parent))
    if not Path(proxy).exists():
        missing(f"mcp-proxy is not installed at {proxy} (.ci/run installs it; or set "
                "MCP_PROXY_BIN)")
    if server is None:
        missing("mcp-server-time is not installed: pip install -e '.[test]'")
    return proxy, server


@asynccontextmanager
async def time_server(tmp: Path) -> AsyncIterator[str]:
    """mcp-server-time behind mcp-proxy on a loopback port; yields its base URL."""
    proxy, server = _programs()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = (tmp / "mcp-proxy.log").open("w")
    process = subprocess.Popen(
        [proxy, "--host", "127.0.0.1", "--port", str(port), "--", server,
         "--local-timezone", "UTC"], stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        async with aiohttp.ClientSession() as http:
            for _ in range(600):  # until it listens (it starts the server first)
                if process.poll() is not None:
                    raise AssertionError((tmp / "mcp-proxy.log").read_text())
                try:
                    async with http.get(url + "/status"):
                        break
                except aiohttp.ClientConnectionError:
                    await asyncio.sleep(0.05)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()


async def test_mcp_server_time_behind_mcp_proxy(bureau: BureauUnderTest,
                                                tmp_path: Path) -> None:
    key = await bureau.reporter(("facts",))
    agent = reporters.key_id(reporters.generate_key())
    calls: dict[str, Any] = {
        "now in Paris": ("get_current_time", {"timezone": "Europe/Paris"}),
        "a conversion": ("convert_time", {"source_timezone": "UTC", "time": "12:00",
                                          "target_timezone": "Asia/Tokyo"}),
        "a zone that does not exist": ("get_current_time", {"timezone": "Nowhere/Land"}),
        "a required argument missing": ("get_current_time", {}),
        "an argument of the wrong type": ("get_current_time", {"timezone": 5}),
        "a tool it does not list": ("get_the_weather", {"city": "Paris"}),
    }
    answers, ids = {}, {}
    async with time_server(tmp_path) as base, running_proxy(
            bureau, tmp_path, [{"prefix": "/time", "agent": agent, "upstream": base}],
            reporter=key) as px:
        async with mcp_client(px.url + "/time/mcp") as (session, seen):
            listed = await session.list_tools()
            assert {t.name for t in listed.tools} >= {"get_current_time", "convert_time"}
            assert seen == []  # initialize, its notification, tools/list: no fact
            for name, (tool, arguments) in calls.items():
                before = len(seen)
                answers[name] = await session.call_tool(tool, arguments)
                ids[name] = seen[before:]
        await px.proxy.settle()
    assert {n: len(i) for n, i in ids.items()} == dict.fromkeys(ids, 1)  # one each
    facts = await stored_facts(bureau.database_url, reporters.key_id(key))
    assert len(facts) == len(calls)  # the session's GET stream and DELETE made none
    # the server answers its own failure and the caller's mistakes alike: isError
    assert [answers[n].is_error for n in calls] == [False, False, True, True, True, True]
    got = {n: (facts[i[0]]["answered"], facts[i[0]]["well_formed"], facts[i[0]]["claimed"])
           for n, i in ids.items()}
    assert got == {
        "now in Paris": (True, True, "SUCCESS"),
        "a conversion": (True, True, "SUCCESS"),
        # a string is what the schema asks for: nothing says it is the caller's fault
        "a zone that does not exist": (True, True, "FAILURE"),
        "a required argument missing": (True, True, "DECLINED"),
        "an argument of the wrong type": (True, True, "DECLINED"),
        "a tool it does not list": (True, True, "DECLINED"),
    }
    assert all(isinstance(facts[i[0]]["latency_ms"], int) for i in ids.values())
